#include "atl/core/error_file.hpp"

#include <gtest/gtest.h>

#include <string>

using atl::error_file_summary;

TEST(ErrorFileSummary, ReadsWhatTorchelasticsRecordWrites) {
  // As torch.distributed.elastic.multiprocessing.errors.ErrorHandler writes it.
  const std::string file =
      R"({"message": {"message": "RuntimeError: CUDA out of memory. Tried 2 GiB",
    "extraInfo": {"py_callstack": "Traceback (most recent call last):\n  File \"train.py\"",
                  "timestamp": "1764777600"}}})";
  EXPECT_EQ(error_file_summary(file), "RuntimeError: CUDA out of memory. Tried 2 GiB");
}

TEST(ErrorFileSummary, ReadsAPlainMessage) {
  EXPECT_EQ(error_file_summary(R"({"message": "NCCL error: unhandled system error"})"),
            "NCCL error: unhandled system error");
}

TEST(ErrorFileSummary, KeepsTheFirstLineThatSaysSomething) {
  EXPECT_EQ(
      error_file_summary(R"({"message": {"message": "\n  \r\n  ValueError: bad batch  \nmore"}})"),
      "ValueError: bad batch");
}

TEST(ErrorFileSummary, CutsALongMessageOnACharacter) {
  std::string long_message(400, 'x');
  long_message.replace(299, 2, "\xC3\xA9");  // "é" across the cut
  auto summary = error_file_summary(R"({"message": ")" + long_message + R"("})");
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->substr(0, 299), std::string(299, 'x'));
  EXPECT_EQ(summary->substr(299), "\u2026") << "the é would have been cut in half";
  EXPECT_LE(summary->size(), atl::kErrorSummaryMax + 3);
}

TEST(ErrorFileSummary, RefusesWhatIsNotAnErrorFile) {
  for (const char* bad :
       {"", "   ", "not json", "[]", "\"message\"", "{}", R"({"msg": "x"})", R"({"message": 42})",
        R"({"message": {"extraInfo": {}}})", R"({"message": {"message": null}})",
        R"({"message": ""})", R"({"message": " \n \n"})", R"({"message": "x")"}) {
    EXPECT_FALSE(error_file_summary(bad)) << bad;
  }
}
