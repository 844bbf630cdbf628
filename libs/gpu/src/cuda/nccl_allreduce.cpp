// NCCL allreduce with a watchdog. Every communicator is non-blocking
// (config.blocking = 0): init and collectives return at once (or with
// ncclInProgress), and this code polls ncclCommGetAsyncError and the CUDA
// events until the work is done, an error shows, or the deadline passes; then
// it aborts every communicator (ncclCommAbort), which also unblocks the GPU
// kernels waiting on a peer that will never send.
#include "atl/gpu/nccl_allreduce.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "atl/gpu/hex.hpp"
#include "kernels.hpp"

namespace atl::gpu {

namespace {

using Clock = std::chrono::steady_clock;

std::string cuda_text(const char* what, cudaError_t err) {
  return std::string(what) + ": " + cudaGetErrorString(err);
}

struct LocalRank {
  int device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  float* buffer = nullptr;    // receive (and, in place, send) buffer
  float* send = nullptr;      // out of place: the send buffer
  std::int64_t capacity = 0;  // bytes of each
  float* flag = nullptr;      // agree()'s one float
  unsigned long long* wrong = nullptr;
};

class NcclImpl : public NcclAllreduce {
 public:
  explicit NcclImpl(const NcclSetup& setup) : setup_(setup) {}

  ~NcclImpl() override {
    if (!broken_) {
      // Flush, then destroy; a finalize that does not end in time is aborted
      // (fail() aborts every communicator and forgets it). Several
      // communicators of one thread finalize together, as one group.
      ncclGroupStart();
      for (auto& r : ranks_) {
        cudaSetDevice(r.device);
        if (r.comm) ncclCommFinalize(r.comm);
      }
      ncclGroupEnd();  // ncclInProgress for non-blocking communicators
      if (wait_comms("finalize")) {
        for (auto& r : ranks_) {
          cudaSetDevice(r.device);
          if (r.comm) ncclCommDestroy(r.comm);
        }
      }
    }
    for (auto& r : ranks_) {
      cudaSetDevice(r.device);
      if (r.buffer) cudaFree(r.buffer);
      if (r.send) cudaFree(r.send);
      if (r.flag) cudaFree(r.flag);
      if (r.wrong) cudaFree(r.wrong);
      if (r.start) cudaEventDestroy(r.start);
      if (r.stop) cudaEventDestroy(r.stop);
      if (r.stream) cudaStreamDestroy(r.stream);
    }
  }

  Status init() {
    if (setup_.devices.empty()) return make_error("NCCL: no GPU to put a rank on");
    const int world = setup_.world ? setup_.world : static_cast<int>(setup_.devices.size());
    world_ = world;
    ncclUniqueId id{};
    if (setup_.unique_id.empty()) {
      // Every rank lives in this process: its own id, no one else to tell.
      if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess)
        return make_error(std::string("ncclGetUniqueId: ") + ncclGetErrorString(r));
    } else {
      auto bytes = hex_decode(setup_.unique_id);
      if (!bytes || bytes->size() != sizeof id.internal)
        return make_error("NCCL unique id is not " + std::to_string(sizeof id.internal) +
                          " bytes of hex");
      std::memcpy(id.internal, bytes->data(), sizeof id.internal);
    }
    ranks_.resize(setup_.devices.size());
    for (size_t k = 0; k < ranks_.size(); ++k) {
      auto& r = ranks_[k];
      r.device = setup_.devices[k];
      if (cudaError_t e = cudaSetDevice(r.device); e != cudaSuccess)
        return make_error(cuda_text(("cudaSetDevice " + std::to_string(r.device)).c_str(), e));
      if (cudaError_t e = cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking);
          e != cudaSuccess)
        return make_error(cuda_text("cudaStreamCreate", e));
      if (cudaEventCreate(&r.start) != cudaSuccess || cudaEventCreate(&r.stop) != cudaSuccess ||
          cudaMalloc(&r.flag, sizeof(float)) != cudaSuccess ||
          cudaMalloc(&r.wrong, sizeof(unsigned long long)) != cudaSuccess)
        return make_error(
            cuda_text(("setup on GPU " + std::to_string(r.device)).c_str(), cudaGetLastError()));
    }
    // One group: several ranks in one process must join together. The
    // configs outlive the non-blocking init.
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    configs_.assign(ranks_.size(), config);
    ncclGroupStart();
    for (size_t k = 0; k < ranks_.size(); ++k) {
      cudaSetDevice(ranks_[k].device);
      ncclResult_t r = ncclCommInitRankConfig(
          &ranks_[k].comm, world, id, setup_.first_rank + static_cast<int>(k), &configs_[k]);
      if (r != ncclSuccess && r != ncclInProgress) {
        ncclGroupEnd();
        fail(std::string("ncclCommInitRankConfig: ") + ncclGetErrorString(r));
        return make_error(last_error_);
      }
    }
    ncclResult_t g = ncclGroupEnd();
    if (g != ncclSuccess && g != ncclInProgress) {
      fail(std::string("NCCL init: ") + ncclGetErrorString(g));
      return make_error(last_error_);
    }
    if (!wait_comms("init of " + std::to_string(world) + " ranks")) return make_error(last_error_);
    return Ok{};
  }

  int world() const override { return world_; }

  Expected<AllreduceRound> allreduce(std::int64_t bytes, int round,
                                     const AllreduceOptions& options) override {
    if (broken_) return make_error("NCCL communicator was aborted: " + last_error_);
    const std::int64_t count = bytes / static_cast<std::int64_t>(sizeof(float));
    if (count < 1) return make_error("allreduce of less than one float");
    if (options.iterations < 1) return make_error("allreduce: at least one timed iteration");
    const bool in_place = options.in_place;
    for (size_t k = 0; k < ranks_.size(); ++k) {
      auto& r = ranks_[k];
      if (cudaError_t e = cudaSetDevice(r.device); e != cudaSuccess)
        return make_error(cuda_text("cudaSetDevice", e));
      if (r.capacity < bytes) {
        if (r.buffer) cudaFree(r.buffer);
        if (r.send) cudaFree(r.send);
        r.buffer = r.send = nullptr;
        r.capacity = 0;
        if (cudaError_t e = cudaMalloc(&r.buffer, static_cast<size_t>(bytes)); e != cudaSuccess)
          return make_error(
              cuda_text(("cudaMalloc GPU " + std::to_string(r.device) + " buffer").c_str(), e));
        r.capacity = bytes;
      }
      if (!in_place && !r.send) {
        if (cudaError_t e = cudaMalloc(&r.send, static_cast<size_t>(r.capacity)); e != cudaSuccess)
          return make_error(cuda_text(
              ("cudaMalloc GPU " + std::to_string(r.device) + " send buffer").c_str(), e));
      }
      if (auto s = fill(r, k, count, round, in_place); !s) return Error{s.error()};
    }
    auto once = [&] {
      return collective([&](LocalRank& r) {
        return ncclAllReduce(in_place ? r.buffer : r.send, r.buffer, static_cast<size_t>(count),
                             ncclFloat, ncclSum, r.comm, r.stream);
      });
    };
    for (int w = 0; w < options.warmup; ++w)
      if (auto s = once(); !s) return Error{s.error()};
    if (auto s = record(&LocalRank::start); !s) return Error{s.error()};
    for (int it = 0; it < options.iterations; ++it)
      if (auto s = once(); !s) return Error{s.error()};
    if (auto s = record(&LocalRank::stop); !s) return Error{s.error()};
    if (!wait_streams("allreduce of " + std::to_string(bytes) + " bytes"))
      return make_error(last_error_);
    AllreduceRound result;
    result.bytes = bytes;
    for (auto& r : ranks_) {
      cudaSetDevice(r.device);
      float ms = 0;
      if (cudaError_t e = cudaEventElapsedTime(&ms, r.start, r.stop); e != cudaSuccess)
        return make_error(cuda_text("cudaEventElapsedTime", e));
      result.seconds += ms / 1000.0 / options.iterations;
    }
    result.seconds /= static_cast<double>(ranks_.size());
    if (in_place) {
      // The window's sums compounded: fill anew and reduce once for the check.
      for (size_t k = 0; k < ranks_.size(); ++k)
        if (auto s = fill(ranks_[k], k, count, round, true); !s) return Error{s.error()};
      if (auto s = once(); !s) return Error{s.error()};
      if (auto s = record(&LocalRank::stop); !s) return Error{s.error()};
      if (!wait_streams("allreduce of " + std::to_string(bytes) + " bytes"))
        return make_error(last_error_);
    }
    for (auto& r : ranks_) {
      cudaSetDevice(r.device);
      if (cudaError_t e = cudaMemsetAsync(r.wrong, 0, sizeof(unsigned long long), r.stream);
          e != cudaSuccess)
        return make_error(cuda_text("cudaMemsetAsync", e));
      if (auto e = static_cast<cudaError_t>(
              kernels::count_wrong_sums(r.buffer, count, world_, round, r.wrong, r.stream));
          e != cudaSuccess)
        return make_error(cuda_text("verify kernel", e));
      unsigned long long wrong = 0;
      if (cudaError_t e =
              cudaMemcpyAsync(&wrong, r.wrong, sizeof wrong, cudaMemcpyDeviceToHost, r.stream);
          e != cudaSuccess)
        return make_error(cuda_text("verify copy", e));
      if (cudaError_t e = cudaStreamSynchronize(r.stream); e != cudaSuccess)
        return make_error(cuda_text("verify", e));
      result.wrong += static_cast<std::int64_t>(wrong);
    }
    return result;
  }

  Expected<bool> agree(bool decision) override {
    if (broken_) return make_error("NCCL communicator was aborted: " + last_error_);
    for (size_t k = 0; k < ranks_.size(); ++k) {
      auto& r = ranks_[k];
      cudaSetDevice(r.device);
      float mine = (setup_.first_rank + static_cast<int>(k) == 0 && decision) ? 1.0f : 0.0f;
      if (cudaError_t e =
              cudaMemcpyAsync(r.flag, &mine, sizeof mine, cudaMemcpyHostToDevice, r.stream);
          e != cudaSuccess)
        return make_error(cuda_text("agree: cudaMemcpyAsync", e));
      // `mine` lives on this stack frame.
      if (cudaError_t e = cudaStreamSynchronize(r.stream); e != cudaSuccess)
        return make_error(cuda_text("agree: cudaStreamSynchronize", e));
    }
    if (auto s = collective([&](LocalRank& r) {
          return ncclAllReduce(r.flag, r.flag, 1, ncclFloat, ncclSum, r.comm, r.stream);
        });
        !s)
      return Error{s.error()};
    if (auto s = record(&LocalRank::stop); !s) return Error{s.error()};
    if (!wait_streams("agreeing on another round")) return make_error(last_error_);
    float sum = 0;
    auto& first = ranks_.front();
    cudaSetDevice(first.device);
    // The streams are non-blocking: copy on ours, not the default stream.
    if (cudaError_t e =
            cudaMemcpyAsync(&sum, first.flag, sizeof sum, cudaMemcpyDeviceToHost, first.stream);
        e != cudaSuccess)
      return make_error(cuda_text("agree copy", e));
    if (cudaError_t e = cudaStreamSynchronize(first.stream); e != cudaSuccess)
      return make_error(cuda_text("agree", e));
    return sum > 0.5f;
  }

 private:
  // Enqueues `call` on every local rank as one group, and waits (watched)
  // until the enqueue finished on every communicator.
  // Records `event` (start or stop) on every local rank's stream.
  Status record(cudaEvent_t LocalRank::*event) {
    for (auto& r : ranks_) {
      cudaSetDevice(r.device);
      if (cudaError_t e = cudaEventRecord(r.*event, r.stream); e != cudaSuccess)
        return make_error(cuda_text("cudaEventRecord", e));
    }
    return Ok{};
  }

  // Rank k's input for `round`: in its only buffer (in place) or its send buffer.
  Status fill(LocalRank& r, size_t k, std::int64_t count, int round, bool in_place) {
    cudaSetDevice(r.device);
    const int rank = setup_.first_rank + static_cast<int>(k);
    if (auto e = static_cast<cudaError_t>(
            kernels::fill_ring_input(in_place ? r.buffer : r.send, count, rank, round, r.stream));
        e != cudaSuccess)
      return make_error(cuda_text("fill kernel", e));
    return Ok{};
  }

  template <class Call>
  Status collective(Call call) {
    ncclGroupStart();
    for (auto& r : ranks_) {
      cudaSetDevice(r.device);
      ncclResult_t res = call(r);
      if (res != ncclSuccess && res != ncclInProgress) {
        ncclGroupEnd();
        fail(std::string("NCCL enqueue: ") + ncclGetErrorString(res));
        return make_error(last_error_);
      }
    }
    ncclResult_t g = ncclGroupEnd();
    if (g != ncclSuccess && g != ncclInProgress) {
      fail(std::string("NCCL group: ") + ncclGetErrorString(g));
      return make_error(last_error_);
    }
    if (!wait_comms("enqueue")) return make_error(last_error_);
    return Ok{};
  }

  bool wait_comms(const std::string& what) { return watch(what, false); }
  bool wait_streams(const std::string& what) { return watch(what, true); }

  // The watchdog. Polls every communicator's state (and with `streams`, each
  // stream's stop event: a peer that died leaves the kernels waiting forever,
  // never erroring) until nothing is in progress. An error or the deadline
  // aborts every communicator.
  bool watch(const std::string& what, bool streams) {
    const auto started = Clock::now();
    const auto deadline = started + setup_.timeout;
    for (;;) {
      bool pending = false;
      for (auto& r : ranks_) {
        if (!r.comm) continue;
        if (streams) {
          cudaSetDevice(r.device);
          cudaError_t e = cudaEventQuery(r.stop);
          if (e == cudaErrorNotReady) {
            pending = true;
          } else if (e != cudaSuccess) {
            fail(cuda_text(("GPU " + std::to_string(r.device) + " " + what).c_str(), e));
            return false;
          }
        }
        ncclResult_t state = ncclSuccess;
        ncclCommGetAsyncError(r.comm, &state);
        if (state == ncclInProgress) {
          pending = true;
        } else if (state != ncclSuccess) {
          fail("NCCL " + what + " failed on GPU " + std::to_string(r.device) + ": " +
               ncclGetErrorString(state) + describe_last(r.comm));
          return false;
        }
      }
      if (!pending) return true;
      const auto now = Clock::now();
      if (now > deadline) {
        fail("NCCL " + what + " did not finish within " +
             std::to_string(setup_.timeout.count() / 1000) + "s (a peer is gone or stuck)");
        return false;
      }
      // An enqueue inside a timed window is waited for by spinning (a sleep
      // there would leave the GPU idle and count in the figure); a wait
      // that goes on, or one for streams whose stop event is recorded
      // already, sleeps.
      if (!streams && now - started < std::chrono::milliseconds(50))
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(streams ? 200 : 1000));
    }
  }

  static std::string describe_last(ncclComm_t comm) {
    const char* text = ncclGetLastError(comm);
    return text && *text ? std::string(" (") + text + ")" : "";
  }

  void fail(std::string why) {
    last_error_ = std::move(why);
    broken_ = true;
    for (auto& r : ranks_) {
      if (!r.comm) continue;
      cudaSetDevice(r.device);
      ncclCommAbort(r.comm);
      r.comm = nullptr;
    }
  }

  NcclSetup setup_;
  std::vector<LocalRank> ranks_;
  std::vector<ncclConfig_t> configs_;
  int world_ = 0;
  bool broken_ = false;
  std::string last_error_;
};

}  // namespace

bool nccl_compiled_in() { return true; }

Expected<std::unique_ptr<NcclAllreduce>> NcclAllreduce::create(const NcclSetup& setup) {
  auto impl = std::make_unique<NcclImpl>(setup);
  if (auto s = impl->init(); !s) return Error{s.error()};
  return std::unique_ptr<NcclAllreduce>(std::move(impl));
}

Expected<std::string> nccl_make_unique_id() {
  ncclUniqueId id{};
  if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess)
    return make_error(std::string("ncclGetUniqueId: ") + ncclGetErrorString(r));
  return hex_encode(id.internal, sizeof id.internal);
}

std::int64_t least_free_device_memory(const std::vector<int>& devices) {
  std::int64_t least = 0;
  for (int d : devices) {
    size_t free_bytes = 0, total = 0;
    if (cudaSetDevice(d) != cudaSuccess || cudaMemGetInfo(&free_bytes, &total) != cudaSuccess)
      return 0;
    auto f = static_cast<std::int64_t>(free_bytes);
    if (least == 0 || f < least) least = f;
  }
  return least;
}

}  // namespace atl::gpu
