// The allreduce rendezvous plan: what the supervisor answers each member.
#include "atl/gpu/rendezvous.hpp"

#include <gtest/gtest.h>

using namespace atl::gpu;

namespace {

RendezvousHello tcp_member(int index, const std::string& pod, const std::string& address) {
  RendezvousHello h;
  h.index = index;
  h.pod = pod;
  h.transport = "tcp";
  h.address = address;
  h.sizes = {8 << 20};
  return h;
}

RendezvousHello nccl_member(int index, const std::string& pod, std::vector<std::string> gpus) {
  RendezvousHello h;
  h.index = index;
  h.pod = pod;
  h.host = "node-" + pod;
  h.transport = "nccl";
  h.gpus = std::move(gpus);
  if (index == 0) h.nccl_id = std::string(256, 'a');
  h.sizes = {512LL << 20, 1LL << 30, 2LL << 30, 4LL << 30};
  h.free_bytes = 80LL << 30;
  return h;
}

}  // namespace

TEST(Rendezvous, HelloAndReplyRoundTrip) {
  auto h = nccl_member(0, "job-worker-0", {"GPU-1", "GPU-2"});
  auto back = decode_hello(encode_hello(h));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->pod, h.pod);
  EXPECT_EQ(back->gpus, h.gpus);
  EXPECT_EQ(back->nccl_id, h.nccl_id);
  EXPECT_EQ(back->sizes, h.sizes);
  EXPECT_EQ(back->free_bytes, h.free_bytes);
  RendezvousReply r{"", {"10.0.0.1:5000"}, "ff", 8, 4, {1 << 20}, {4LL << 30}};
  auto rb = decode_reply(encode_reply(r));
  ASSERT_TRUE(rb.ok()) << rb.error();
  EXPECT_EQ(rb->world, 8);
  EXPECT_EQ(rb->first_rank, 4);
  EXPECT_EQ(rb->peers, r.peers);
  EXPECT_EQ(rb->skipped, r.skipped);
}

TEST(Rendezvous, BadMessagesAreRefusedWithAReason) {
  EXPECT_FALSE(decode_hello("not json").ok());
  EXPECT_FALSE(decode_hello("[1,2]").ok());
  EXPECT_FALSE(decode_hello(R"({"transport":"tcp"})").ok());  // no index
  auto bad_transport = decode_hello(R"({"index":0,"transport":"carrier-pigeon"})");
  ASSERT_FALSE(bad_transport.ok());
  EXPECT_NE(bad_transport.error().find("carrier-pigeon"), std::string::npos);
  EXPECT_FALSE(decode_hello(R"({"index":"zero","transport":"tcp"})").ok());
  // Numbers that do not fit are refused, not converted (found by fuzzing).
  EXPECT_FALSE(decode_hello(R"({"index":1.7e43,"transport":"tcp"})").ok());
  EXPECT_FALSE(decode_hello(R"({"index":4294967296,"transport":"tcp"})").ok());
  EXPECT_FALSE(decode_hello(R"({"index":0,"transport":"tcp","sizes":[1e30]})").ok());
  EXPECT_FALSE(decode_reply(R"({"world":99999999999,"first_rank":0})").ok());
  EXPECT_FALSE(decode_hello(R"({"index":0,"transport":"tcp","sizes":"big"})").ok());
  EXPECT_FALSE(decode_reply("{").ok());
  EXPECT_FALSE(decode_reply(R"({"world":2,"first_rank":2})").ok());  // rank outside the world
  EXPECT_FALSE(decode_reply(R"({"world":"two"})").ok());
  auto refusal = decode_reply(R"({"error":"no"})");
  ASSERT_TRUE(refusal.ok());  // a refusal needs no world
  EXPECT_EQ(refusal->error, "no");
}

TEST(Rendezvous, TcpMembersGetTheWholeRingInOrder) {
  auto plan =
      plan_rendezvous({tcp_member(1, "b", "10.0.0.2:41000"), tcp_member(0, "a", "10.0.0.1:40000")});
  ASSERT_TRUE(plan.ok()) << plan.error();
  ASSERT_EQ(plan->size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ((*plan)[i].peers, (std::vector<std::string>{"10.0.0.1:40000", "10.0.0.2:41000"}));
    EXPECT_EQ((*plan)[i].first_rank, i);
    EXPECT_EQ((*plan)[i].world, 2);
    EXPECT_EQ((*plan)[i].sizes, std::vector<std::int64_t>{8 << 20});
  }
}

TEST(Rendezvous, NcclMembersGetTheIdAndOneRankPerGpu) {
  auto plan = plan_rendezvous({nccl_member(0, "w0", {"GPU-a", "GPU-b"}),
                               nccl_member(1, "w1", {"GPU-c", "GPU-d", "GPU-e"}),
                               nccl_member(2, "w2", {"GPU-f"})});
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_EQ((*plan)[0].first_rank, 0);
  EXPECT_EQ((*plan)[1].first_rank, 2);
  EXPECT_EQ((*plan)[2].first_rank, 5);
  for (const auto& r : *plan) {
    EXPECT_EQ(r.world, 6);
    EXPECT_EQ(r.nccl_id, std::string(256, 'a'));
  }
}

TEST(Rendezvous, TwoRanksOnOneGpuAreRefusedNamingBothPods) {
  // Two pods on one host that both see the host's GPU 0.
  auto plan = plan_rendezvous(
      {nccl_member(0, "w0", {"GPU-same", "GPU-x"}), nccl_member(1, "w1", {"GPU-same"})});
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().find("two ranks on one GPU"), std::string::npos) << plan.error();
  EXPECT_NE(plan.error().find("w0 and w1"), std::string::npos) << plan.error();
  EXPECT_NE(plan.error().find("GPU-same"), std::string::npos) << plan.error();
  // Within one member too.
  EXPECT_FALSE(plan_rendezvous({nccl_member(0, "w0", {"GPU-a", "GPU-a"})}).ok());
}

TEST(Rendezvous, RefusesWhatCannotRunTogether) {
  auto mixed = plan_rendezvous(
      {nccl_member(0, "gpu-pod", {"GPU-a"}), tcp_member(1, "cpu-pod", "10.0.0.2:1")});
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.error().find("cpu-pod has no usable GPU"), std::string::npos) << mixed.error();
  auto gap = plan_rendezvous({tcp_member(0, "a", "h:1"), tcp_member(2, "c", "h:3")});
  ASSERT_FALSE(gap.ok());
  EXPECT_NE(gap.error().find("member 1"), std::string::npos) << gap.error();
  EXPECT_FALSE(plan_rendezvous({tcp_member(0, "a", "h:1"), tcp_member(0, "b", "h:2")}).ok());
  EXPECT_FALSE(plan_rendezvous({}).ok());
  EXPECT_FALSE(plan_rendezvous({tcp_member(0, "a", ""), tcp_member(1, "b", "h:2")}).ok());
  auto no_id = nccl_member(0, "w0", {"GPU-a"});
  no_id.nccl_id.clear();
  EXPECT_FALSE(plan_rendezvous({no_id}).ok());
  auto other_sizes = tcp_member(1, "b", "h:2");
  other_sizes.sizes = {1 << 20};
  EXPECT_FALSE(plan_rendezvous({tcp_member(0, "a", "h:1"), other_sizes}).ok());
}

TEST(Rendezvous, SizesThatDoNotFitEveryGpuAreDropped) {
  auto small = nccl_member(1, "w1", {"GPU-b"});
  small.free_bytes = 3LL << 30;  // 2G + a tenth fits, 4G does not
  auto plan = plan_rendezvous({nccl_member(0, "w0", {"GPU-a"}), small});
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_EQ((*plan)[0].sizes, (std::vector<std::int64_t>{512LL << 20, 1LL << 30, 2LL << 30}));
  EXPECT_EQ((*plan)[1].skipped, std::vector<std::int64_t>{4LL << 30});
  small.free_bytes = 100LL << 20;
  auto none = plan_rendezvous({nccl_member(0, "w0", {"GPU-a"}), small});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().find("512M"), std::string::npos) << none.error();
}

TEST(Rendezvous, HexAndUuidSpelling) {
  const unsigned char bytes[16] = {0x8f, 0x6c, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06,
                                   0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0xff};
  EXPECT_EQ(format_gpu_uuid(bytes), "GPU-8f6c0102-0304-0506-0708-090a0b0c0dff");
  auto back = hex_decode(hex_encode(bytes, 16));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(std::vector<unsigned char>(bytes, bytes + 16), *back);
  EXPECT_TRUE(hex_decode("ABcd").ok());
  EXPECT_FALSE(hex_decode("abc").ok());
  auto bad = hex_decode("zz");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("zz"), std::string::npos);
}
