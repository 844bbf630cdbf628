// libs/gpu on its CPU path: the seed's formats and formulas, the checks that
// must catch a bad GPU, and the CPU backend end to end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "atl/gpu/backend.hpp"
#include "atl/gpu/burn_types.hpp"
#include "atl/gpu/device_math.hpp"
#include "atl/gpu/metrics.hpp"
#include "atl/gpu/nccl_allreduce.hpp"
#include "atl/gpu/nvml_health.hpp"
#include "atl/gpu/verify.hpp"
#include "common/free_ports.hpp"

using namespace atl::gpu;

TEST(BurnTypes, ParseAndRejectWithTheChoices) {
  EXPECT_EQ(*parse_burn_type("gemm"), BurnType::gemm);
  EXPECT_EQ(*parse_burn_type("batch"), BurnType::batch);
  EXPECT_EQ(*parse_check_type("all"), CheckType::all);
  auto bad = parse_burn_type("gemmm");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("'gemmm'"), std::string::npos);
  EXPECT_NE(bad.error().find("transfer"), std::string::npos);
  EXPECT_FALSE(parse_check_type("cpu").ok());
}

TEST(BurnSizes, SeedLabelsArePowersOf1024) {
  EXPECT_EQ(*parse_burn_size("512M"), 512LL << 20);
  EXPECT_EQ(*parse_burn_size("4G"), 4LL << 30);
  EXPECT_EQ(*parse_burn_size("64K"), 64LL << 10);
  EXPECT_EQ(format_burn_size(512LL << 20), "512M");
  EXPECT_EQ(format_burn_size(1LL << 30), "1G");
  EXPECT_EQ(format_burn_size(1000), "1000");
  for (const char* bad : {"", "M", "1.5G", "12Mi", "-1G", "1T"})
    EXPECT_FALSE(parse_burn_size(bad).ok()) << bad;
  EXPECT_EQ(allreduce_sizes(8LL << 30),
            (std::vector<std::int64_t>{512LL << 20, 1LL << 30, 2LL << 30, 4LL << 30}));
  EXPECT_EQ(allreduce_sizes(1LL << 30), (std::vector<std::int64_t>{512LL << 20, 1LL << 30}));
}

TEST(Metrics, NcclTestsFormulas) {
  // 1 GB in 1 s: algbw 1 GB/s; allreduce on 8 ranks moves 2*7/8 of it per rank.
  EXPECT_DOUBLE_EQ(algbw_gbps(1000000000, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(allreduce_busbw_gbps(1000000000, 1.0, 8), 1.75);
  EXPECT_DOUBLE_EQ(allreduce_busbw_gbps(1000000000, 0.5, 2), 2.0);
  EXPECT_DOUBLE_EQ(allreduce_busbw_gbps(1000000000, 1.0, 1), 0.0);
  EXPECT_DOUBLE_EQ(gemm_tflops(1000, 1000, 1000, 0.001), 2.0);
  EXPECT_EQ(algbw_gbps(100, 0), 0);
}

TEST(Metrics, TheSeedsRoundLine) {
  EXPECT_EQ(format_allreduce_round(1, 512LL << 20, 1.3449, 1.336, "jo-x-worker-0"),
            "Round 1: AllReduce Perf(GB/s): Size=512M, BusBW=1.34 GB/s, AlgBW=1.34 GB/s, "
            "MasterAddr=jo-x-worker-0");
  EXPECT_NE(format_allreduce_round(2, 2LL << 30, 10, 5, "m").find("Size=2G,"), std::string::npos);
}

TEST(Verify, CatchesAPlantedWrongElementAndNaN) {
  std::vector<float> a(1000, 1.5f), b = a;
  EXPECT_TRUE(compare_results(a, b).ok());
  b[617] = std::nextafter(1.5f, 2.0f);  // one ulp off
  auto m = compare_results(a, b);
  EXPECT_EQ(m.differing, 1);
  b[3] = std::nanf("");
  m = compare_results(a, b);
  EXPECT_EQ(m.nans, 1);
  EXPECT_FALSE(m.ok());
  EXPECT_EQ(compare_results(a, std::vector<float>(999, 1.5f)).differing, 1);  // a missing element
}

TEST(Verify, ExactInputsGiveTheExactReference) {
  const int n = 48;
  std::vector<float> a(n * n), b(n * n);
  fill_exact_inputs(a, b, 7);
  for (float x : a) EXPECT_TRUE(x == std::round(x) && std::fabs(x) <= 2);
  std::vector<double> ref;
  reference_gemm(a, b, ref, n, n, n);
  std::vector<float> got(ref.begin(), ref.end());
  EXPECT_EQ(count_wrong(ref, got), 0);
  got[5] += 1;
  EXPECT_EQ(count_wrong(ref, got), 1);
}

TEST(CpuBackend, GemmIsCorrectRepeatableAndTimed) {
  auto backend = make_cpu_backend(2);
  EXPECT_EQ(backend->name(), "cpu");
  GemmConfig config;
  config.size = 96;
  config.repeats = 3;
  auto r = backend->gemm(0, config);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->ok()) << r->differing << " differing, " << r->nans << " NaN, " << r->wrong
                       << " wrong";
  EXPECT_GT(r->tflops, 0);
  EXPECT_FALSE(backend->gemm(1, config).ok());
  config.size = 0;
  EXPECT_FALSE(backend->gemm(0, config).ok());
}

TEST(CpuBackend, TransferRoundTripsTheBytes) {
  auto backend = make_cpu_backend();
  auto r = backend->transfer(0, 1 << 20);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->checksum_ok);
  EXPECT_GT(r->h2d_gbps, 0);
  EXPECT_GT(r->d2h_gbps, 0);
  EXPECT_GT(r->bidir_gbps, 0);
  EXPECT_GT(r->d2d_gbps, 0);
  EXPECT_FALSE(backend->transfer(0, 1).ok());
}

TEST(CpuBackend, MemoryTestWritesEveryPatternAndReadsItBack) {
  auto backend = make_cpu_backend();
  auto r = backend->memory_test(0, 0.05);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->ok());
  EXPECT_EQ(r->patterns, kMemoryPasses);
  EXPECT_GT(r->bytes, 1 << 20);
  EXPECT_FALSE(backend->memory_test(0, 0).ok());
  EXPECT_FALSE(backend->memory_test(0, 1.5).ok());
}

TEST(NvmlHealth, AbsentDriverIsReportedNotFatalAndTheWorkStillRuns) {
  int runs = 0;
  auto h = atl::gpu::nvml_health("0000:00:00.0", [&] { ++runs; });
  EXPECT_EQ(runs, 1);
  if (!h.available) {
    EXPECT_FALSE(h.note.empty());
    EXPECT_TRUE(h.ok());  // only a real driver can report a bad GPU
  }
}

TEST(KnownAnswer, CpuBackendComputesEveryValueRight) {
  auto backend = make_cpu_backend(2);
  auto r = backend->known_answer(0, 100000);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->elements, 100000);
  EXPECT_EQ(r->wrong, 0);
  EXPECT_FALSE(backend->known_answer(0, 0).ok());
  EXPECT_FALSE(backend->known_answer(1, 10).ok());
}

TEST(KnownAnswer, CatchesAPlantedWrongValue) {
  std::vector<std::uint32_t> got(1000);
  for (std::uint32_t i = 0; i < got.size(); ++i)
    got[i] = atl::gpu::known_answer(i, atl::gpu::kKnownAnswerSeed, atl::gpu::kKnownAnswerRounds);
  EXPECT_EQ(atl::gpu::count_known_answer_errors(got), 0);
  got[617] ^= 1u << 9;  // one flipped bit
  EXPECT_EQ(atl::gpu::count_known_answer_errors(got), 1);
  // Values differ from index to index: a stuck unit writing one value everywhere is caught.
  EXPECT_NE(atl::gpu::known_answer(1, 7, 64), atl::gpu::known_answer(2, 7, 64));
}

TEST(DeviceMath, MemoryPatternsCoverStuckBitsAndAliasedAddresses) {
  EXPECT_EQ(memory_pattern(0, 5), 0u);
  EXPECT_EQ(memory_pattern(1, 5), 0xFFFFFFFFu);
  EXPECT_EQ(memory_pattern(2, 5) ^ memory_pattern(3, 5), 0xFFFFFFFFu);  // every bit both ways
  // The last pass writes a different word at neighbouring and power-of-two-apart
  // addresses, so two addresses that alias one cell read back wrong.
  for (std::uint64_t i : {0ULL, 1ULL, 1023ULL, 1ULL << 20, 1ULL << 33}) {
    EXPECT_NE(memory_pattern(kMemoryPasses - 1, i), memory_pattern(kMemoryPasses - 1, i + 1)) << i;
    EXPECT_NE(memory_pattern(kMemoryPasses - 1, i), memory_pattern(kMemoryPasses - 1, i + 4096))
        << i;
    EXPECT_NE(memory_pattern(kMemoryPasses - 1, i),
              memory_pattern(kMemoryPasses - 1, i + (1ULL << 32)))
        << i;
  }
}

TEST(DeviceMath, RingSumIsTheExactSumOfEveryInput) {
  for (int world : {1, 2, 3, 8, 64, 1024}) {
    for (std::int64_t i : {0LL, 1LL, 4LL, 123456789LL}) {
      for (int round : {1, 2, 7}) {
        double sum = 0;
        for (int r = 0; r < world; ++r) sum += atl::gpu::ring_input(r, i, round);
        EXPECT_EQ(static_cast<double>(atl::gpu::ring_sum(world, i, round)), sum)
            << world << " " << i << " " << round;
      }
    }
  }
}

TEST(Backends, WithoutADeviceTheCpuBackendServes) {
  // No GPU on these machines: even a CUDA build must fall back, not fail.
  auto backend = make_backend();
  ASSERT_NE(backend, nullptr);
  EXPECT_GE(backend->device_count(), 1);
}

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "atl/gpu/ring_allreduce.hpp"

namespace {

std::vector<atl::HostPort> loopback_peers(int n) {
  std::vector<atl::HostPort> peers;
  for (std::uint16_t port : atl::test::unused_ports(n)) peers.push_back({"127.0.0.1", port});
  return peers;
}

}  // namespace

TEST(TcpRing, ThreeMembersSumEveryElementExactly) {
  auto peers = loopback_peers(3);
  std::vector<atl::Expected<AllreduceRound>> results(3, atl::make_error("not run"));
  std::vector<std::thread> members;
  for (int i = 0; i < 3; ++i) {
    members.emplace_back([&, i] {
      auto ring = TcpRing::connect({i, peers, std::chrono::seconds(20)});
      if (!ring) {
        results[i] = atl::Error{ring.error()};
        return;
      }
      auto go = (*ring)->agree(i == 0);  // member 0 says yes; all must hear yes
      if (!go || !*go) {
        results[i] = atl::make_error("agree failed");
        return;
      }
      auto first = (*ring)->allreduce(1 << 20, 1);
      results[i] = first.ok() ? (*ring)->allreduce((1 << 20) + 12, 2) : first;  // uneven chunks too
    });
  }
  for (auto& t : members) t.join();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(results[i].ok()) << "member " << i << ": " << results[i].error();
    EXPECT_EQ(results[i]->wrong, 0) << "member " << i;
    EXPECT_EQ(results[i]->bytes, (1 << 20) + 12);
    EXPECT_GT(results[i]->seconds, 0);
  }
}

TEST(TcpRing, ALostMemberIsAnErrorNotAHang) {
  auto peers = loopback_peers(2);
  atl::Expected<AllreduceRound> survivor = atl::make_error("not run");
  std::thread lost([&] {
    auto ring = TcpRing::connect({1, peers, std::chrono::seconds(20)});
    // Joins the ring, then goes away before the allreduce.
  });
  auto ring = TcpRing::connect({0, peers, std::chrono::seconds(20)});
  lost.join();
  ASSERT_TRUE(ring.ok()) << ring.error();
  survivor = (*ring)->allreduce(4 << 20, 1);
  ASSERT_FALSE(survivor.ok());
  EXPECT_NE(survivor.error().find("127.0.0.1:" + std::to_string(peers[1].port)), std::string::npos)
      << survivor.error();
}

TEST(TcpRing, AnUnreachableMemberIsNamed) {
  auto peers = loopback_peers(2);
  auto ring = TcpRing::connect({0, peers, std::chrono::milliseconds(300)});
  ASSERT_FALSE(ring.ok());
  EXPECT_NE(ring.error().find(peers[1].to_string()), std::string::npos) << ring.error();
}

TEST(Nccl, SetupErrorsAreNamedBeforeAnyCommunicatorExists) {
  NcclSetup none;
  auto empty = NcclAllreduce::create(none);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().find(nccl_compiled_in() ? "no GPU" : "no NCCL"), std::string::npos)
      << empty.error();
  if (!nccl_compiled_in()) return;
  NcclSetup bad_id;
  bad_id.devices = {0};
  bad_id.unique_id = "abc";
  auto bad = NcclAllreduce::create(bad_id);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("unique id"), std::string::npos) << bad.error();
}

TEST(Nccl, WithoutAGpuCreateFailsWithAReasonAndNoHang) {
  if (!nccl_compiled_in()) GTEST_SKIP() << "built without NCCL";
  if (make_backend()->name() == "cuda") GTEST_SKIP() << "a GPU answers here";
  NcclSetup setup;
  setup.devices = {0};
  setup.timeout = std::chrono::seconds(10);
  auto r = NcclAllreduce::create(setup);
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(r.error().empty());
  std::cout << "without a GPU: " << r.error() << "\n";
}

TEST(BurnFigure, RoundTripsAndRefusesWhatIsNotAFigure) {
  atl::gpu::BurnFigure f{3, "allreduce_busbw_gbps", 123.5, "512M"};
  std::string line = atl::gpu::encode_figure(f);
  EXPECT_EQ(line, "figure 3 allreduce_busbw_gbps 123.5 512M");
  auto back = atl::gpu::decode_figure(std::string_view(line).substr(atl::gpu::kFigureVerb.size()));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->gpu, 3);
  EXPECT_EQ(back->metric, "allreduce_busbw_gbps");
  EXPECT_DOUBLE_EQ(back->value, 123.5);
  EXPECT_EQ(back->size, "512M");
  auto gemm = atl::gpu::decode_figure("0 gemm_tflops 612.25");
  ASSERT_TRUE(gemm.ok()) << gemm.error();
  EXPECT_TRUE(gemm->size.empty());
  EXPECT_EQ(gemm->round, 0);  // the whole burn's
  // A round's figure (the dashboard's charts): with or without a size.
  atl::gpu::BurnFigure per_round{1, "allreduce_busbw_gbps", 7.5, "8M", 12};
  EXPECT_EQ(atl::gpu::encode_figure(per_round), "figure 1 allreduce_busbw_gbps 7.5 8M round=12");
  auto r12 = atl::gpu::decode_figure("1 allreduce_busbw_gbps 7.5 8M round=12");
  ASSERT_TRUE(r12.ok()) << r12.error();
  EXPECT_EQ(r12->round, 12);
  EXPECT_EQ(r12->size, "8M");
  auto g3 = atl::gpu::decode_figure("0 gemm_tflops 600 round=3");
  ASSERT_TRUE(g3.ok()) << g3.error();
  EXPECT_EQ(g3->round, 3);
  EXPECT_TRUE(g3->size.empty());
  for (const char* bad : {"",
                          "0",
                          "0 gemm_tflops",
                          "x gemm_tflops 1",
                          "-1 gemm_tflops 1",
                          "1024 gemm_tflops 1",
                          "0 joules 1",
                          "0 gemm_tflops -1",
                          "0 gemm_tflops nan",
                          "0 gemm_tflops inf",
                          "0 gemm_tflops 1x",
                          "0 gemm_tflops 1 512M",
                          "0 allreduce_busbw_gbps 1 lots",
                          "0 h2d_gbps 1 2 3",
                          "0 gemm_tflops 1 round=0",
                          "0 gemm_tflops 1 round=",
                          "0 gemm_tflops 1 round=x",
                          "0 gemm_tflops 1 round=1000001",
                          "0 gemm_tflops round=1",
                          "0 gemm_tflops 1 round=1 round=2"}) {
    auto r = atl::gpu::decode_figure(bad);
    EXPECT_FALSE(r.ok()) << "'" << bad << "'";
    if (!r.ok()) {
      EXPECT_EQ(r.error().rfind("figure: ", 0), 0u) << r.error();
    }
  }
}
