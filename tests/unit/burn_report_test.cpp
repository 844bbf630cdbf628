// atl-burn's progress lines, as the guide's users read them.
#include "atl/gpu/burn_report.hpp"

#include <gtest/gtest.h>

using namespace atl::gpu;

TEST(BurnProgressLines, AGemmRoundSaysItsPodGpuRoundFigureAndVerdict) {
  EXPECT_EQ(format_gemm_round({"jo-x-worker-0", 3, 7, 612.345, true}, "2s/20s"),
            "jo-x-worker-0 GPU 3 round 7 (2s/20s): gemm 612.345 TFLOP/s, verified");
  EXPECT_EQ(format_gemm_round({"p", 0, 1, 0.5, false}, "0s/1m"),
            "p GPU 0 round 1 (0s/1m): gemm 0.500 TFLOP/s, WRONG RESULTS");
}

TEST(BurnProgressLines, ATransferRoundSaysEachDirection) {
  EXPECT_EQ(
      format_transfer_round({"jo-x-worker-0", 1, 2, 51.2, 50.9, 80.1, 1800.0, true}, "4s/20s"),
      "jo-x-worker-0 GPU 1 round 2 (4s/20s): H2D 51.2 GB/s, D2H 50.9 GB/s, both 80.1 GB/s, D2D "
      "1800.0 GB/s, checksum ok");
  EXPECT_EQ(format_transfer_round({"p", 0, 1, 1, 2, 3, 4, false}, "1s/1s"),
            "p GPU 0 round 1 (1s/1s): H2D 1.0 GB/s, D2H 2.0 GB/s, both 3.0 GB/s, D2D 4.0 GB/s, "
            "CHECKSUM MISMATCH");
}
