// The burn report the dashboard charts: what atl-burn prints parses back to
// the same figures, and anything else is left out, never misread.
#include "atl/gpu/burn_report.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "atl/gpu/metrics.hpp"

using namespace atl::gpu;

TEST(BurnReport, FormattedLinesParseBack) {
  std::string text =
      format_gemm_round({"jo-x-worker-0", 3, 7, 612.345, true}, "2s/20s") + "\n" +
      format_gemm_round({"jo-x-worker-1", 0, 1, 0.5, false}, "0s/1m") + "\n" +
      format_transfer_round({"jo-x-worker-0", 1, 2, 51.2, 50.9, 80.1, 1800.0, true}, "4s/20s") +
      "\n" + format_transfer_round({"p", 0, 1, 1, 2, 3, 4, false}, "1s/1s") + "\n" +
      format_allreduce_round(5, 512LL << 20, 1.34, 1.33, "jo-x-worker-0") + "\n" +
      format_allreduce_round(6, 1000, 0.01, 0.02, "m");  // no final newline
  auto r = parse_burn_report(text);
  ASSERT_EQ(r.gemm.size(), 2u);
  EXPECT_EQ(r.gemm[0].pod, "jo-x-worker-0");
  EXPECT_EQ(r.gemm[0].gpu, 3);
  EXPECT_EQ(r.gemm[0].round, 7);
  EXPECT_DOUBLE_EQ(r.gemm[0].tflops, 612.345);
  EXPECT_TRUE(r.gemm[0].verified);
  EXPECT_FALSE(r.gemm[1].verified);
  ASSERT_EQ(r.transfer.size(), 2u);
  EXPECT_EQ(r.transfer[0].gpu, 1);
  EXPECT_DOUBLE_EQ(r.transfer[0].h2d_gbps, 51.2);
  EXPECT_DOUBLE_EQ(r.transfer[0].d2h_gbps, 50.9);
  EXPECT_DOUBLE_EQ(r.transfer[0].both_gbps, 80.1);
  EXPECT_DOUBLE_EQ(r.transfer[0].d2d_gbps, 1800.0);
  EXPECT_TRUE(r.transfer[0].checksum_ok);
  EXPECT_FALSE(r.transfer[1].checksum_ok);
  ASSERT_EQ(r.allreduce.size(), 2u);
  EXPECT_EQ(r.allreduce[0].round, 5);
  EXPECT_EQ(r.allreduce[0].size, "512M");
  EXPECT_DOUBLE_EQ(r.allreduce[0].busbw_gbps, 1.34);
  EXPECT_DOUBLE_EQ(r.allreduce[0].algbw_gbps, 1.33);
  EXPECT_EQ(r.allreduce[0].master, "jo-x-worker-0");
  EXPECT_EQ(r.allreduce[1].size, "1000");
}

TEST(BurnReport, OtherLinesAreNotPartOfIt) {
  auto r = parse_burn_report(
      "jo-x-worker-0 GPU 0 (cpu): gemm 0.005 TFLOP/s average over 4 rounds: PASS\n"
      "jo-x-worker-0: allreduce over 2 nodes (TCP ring), 265 rounds, #wrong 0: PASS\n"
      "Check finished.\n"
      "\n"
      "user said: Round 1: AllReduce Perf(GB/s): Size=8M, BusBW=1.00 GB/s, AlgBW=1.00 GB/s, "
      "MasterAddr=m\n");
  EXPECT_TRUE(r.empty());
}

TEST(BurnReport, DamagedLinesAreLeftOut) {
  const char* bad[] = {
      "Round : AllReduce Perf(GB/s): Size=8M, BusBW=1.00 GB/s, AlgBW=1.00 GB/s, MasterAddr=m",
      "Round 1: AllReduce Perf(GB/s): Size=, BusBW=1.00 GB/s, AlgBW=1.00 GB/s, MasterAddr=m",
      "Round 1: AllReduce Perf(GB/s): Size=8M, BusBW=-1.00 GB/s, AlgBW=1.00 GB/s, MasterAddr=m",
      "Round 1: AllReduce Perf(GB/s): Size=8M, BusBW=1e9 GB/s, AlgBW=1.00 GB/s, MasterAddr=m",
      // Found by the fuzzer: a figure whose formatted form no longer parsed.
      "p GPU 0 round 3 (2s/20s): gemm 60040000000000000000000124345 TFLOP/s, verified",
      "Round 1: AllReduce Perf(GB/s): Size=8M, BusBW=1000000000001 GB/s, AlgBW=1 GB/s, "
      "MasterAddr=m",
      "Round 1: AllReduce Perf(GB/s): Size=8M, BusBW=1. GB/s, AlgBW=1.00 GB/s, MasterAddr=m",
      "Round 1: AllReduce Perf(GB/s): Size=8M, BusBW=nan GB/s, AlgBW=1.00 GB/s, MasterAddr=m",
      "Round 1: AllReduce Perf(GB/s): Size=8M, BusBW=1.00 GB/s, AlgBW=1.00 GB/s, MasterAddr=",
      "Round 1: AllReduce Perf(GB/s): Size=8 M, BusBW=1.00 GB/s, AlgBW=1.00 GB/s, MasterAddr=m",
      "Round 99999999999: AllReduce Perf(GB/s): Size=8M, BusBW=1.00 GB/s, AlgBW=1.00 GB/s, "
      "MasterAddr=m",
      "p GPU 0 round 1 (1s/2s): gemm 1.0 TFLOP/s, maybe",
      "p GPU x round 1 (1s/2s): gemm 1.0 TFLOP/s, verified",
      "p GPU 0 round 1 1s/2s: gemm 1.0 TFLOP/s, verified",
      " GPU 0 round 1 (1s/2s): gemm 1.0 TFLOP/s, verified",
      "p GPU 0 round 1 (1s/2s): gemm TFLOP/s, verified",
      "p GPU 0 round 1 (1s/2s): H2D 1.0 GB/s, D2H 1.0 GB/s, both 1.0 GB/s, checksum ok",
      "p GPU 0 round 1 (1s/2s): H2D 1.0 GB/s, D2H 1.0 GB/s, both 1.0 GB/s, D2D 1.0 GB/s, fine",
      "p GPU 0 round 1 (1s/2s): H2D 1.0 GB/s, D2H 1.0 GB/s, both 1.0 GB/s, D2D 1.0 GB/s",
  };
  for (const char* line : bad) EXPECT_TRUE(parse_burn_report(line).empty()) << line;
}

TEST(BurnReport, CrLfAndManyLines) {
  std::string text;
  for (int i = 1; i <= 100; ++i)
    text += format_allreduce_round(i, 8 << 20, i * 0.5, i * 0.5, "m") + "\r\n";
  auto r = parse_burn_report(text);
  ASSERT_EQ(r.allreduce.size(), 100u);
  EXPECT_EQ(r.allreduce.back().round, 100);
  EXPECT_DOUBLE_EQ(r.allreduce.back().busbw_gbps, 50.0);
}

TEST(BurnReport, JsonHasEverySeries) {
  auto r = parse_burn_report(format_gemm_round({"p", 1, 2, 3.5, true}, "1s/1s") + "\n" +
                             format_allreduce_round(1, 8 << 20, 2, 2, "m"));
  auto j = nlohmann::json::parse(burn_report_json(r));
  ASSERT_EQ(j["gemm"].size(), 1u);
  EXPECT_EQ(j["gemm"][0]["pod"], "p");
  EXPECT_EQ(j["gemm"][0]["gpu"], 1);
  EXPECT_DOUBLE_EQ(j["gemm"][0]["tflops"].get<double>(), 3.5);
  EXPECT_TRUE(j["transfer"].empty());
  EXPECT_EQ(j["allreduce"][0]["size"], "8M");
  EXPECT_EQ(nlohmann::json::parse(burn_report_json({})),
            nlohmann::json::parse(R"({"gemm":[],"transfer":[],"allreduce":[]})"));
}

namespace {

std::string mixed_log(int rounds) {
  std::string text;
  for (int i = 1; i <= rounds; ++i) {
    text += format_gemm_round({"jo-x-worker-0", i % 8, i, 600.0 + i, i % 5 != 0}, "1s/20s") + "\n";
    text += "user output that is not a report line\r\n";
    text += format_transfer_round({"p", 0, i, 50, 51, 80, 1800, true}, "1s/1s") + "\r\n";
    text += format_allreduce_round(i, 8 << 20, i * 0.5, i * 0.25, "m") + "\n";
  }
  return text;
}

std::string json_of(const BurnReport& r) { return burn_report_json(r); }

}  // namespace

TEST(BurnReportReader, AnySplitOfTheLogReadsAsTheWholeLog) {
  std::string text = mixed_log(40);
  std::string whole = json_of(parse_burn_report(text));
  for (std::size_t step : {1u, 2u, 7u, 64u, 100u, 1000u, 100000u}) {
    BurnReportReader reader;
    for (std::size_t at = 0; at < text.size(); at += step)
      reader.feed(std::string_view(text).substr(at, step));
    EXPECT_EQ(json_of(reader.report()), whole) << "fed " << step << " bytes at a time";
    EXPECT_EQ(reader.offset(), static_cast<std::int64_t>(text.size()));
  }
}

TEST(BurnReportReader, ALineStillBeingWrittenWaitsForItsEnd) {
  std::string line = format_gemm_round({"p", 0, 1, 612.5, true}, "1s/2s");
  BurnReportReader reader;
  reader.feed(line.substr(0, line.size() - 12));  // "...gemm 612" so far
  EXPECT_TRUE(reader.report().empty());
  reader.feed(line.substr(line.size() - 12));
  EXPECT_TRUE(reader.report().empty());  // no '\n' yet
  reader.feed("\n");
  ASSERT_EQ(reader.report().gemm.size(), 1u);
  EXPECT_DOUBLE_EQ(reader.report().gemm[0].tflops, 612.5);
}

TEST(BurnReportReader, AnOverlongLineIsDroppedAndTheNextOneRead) {
  BurnReportReader reader;
  std::string junk(BurnReportReader::kMaxLine / 3, 'x');
  for (int i = 0; i < 5; ++i) reader.feed(junk);  // past kMaxLine, no newline
  reader.feed(junk + "\n");
  reader.feed(format_allreduce_round(1, 1000, 1, 1, "m") + "\n");
  EXPECT_TRUE(reader.report().gemm.empty());
  ASSERT_EQ(reader.report().allreduce.size(), 1u);
  // A report line glued after an overlong start is part of that line: dropped.
  BurnReportReader glued;
  glued.feed(std::string(BurnReportReader::kMaxLine + 1, 'x') +
             format_allreduce_round(2, 1000, 1, 1, "m") + "\n");
  EXPECT_TRUE(glued.report().empty());
}
