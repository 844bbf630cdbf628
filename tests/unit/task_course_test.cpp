// TaskCourse: the driver's tasks with their callers as ReplyIds and their
// answers, timers and the sink's messages as effects. No CAF, no processes.
#include "atl/supervisor/task_course.hpp"

#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

namespace {

using atl::Millis;
using atl::ReplyCode;
using atl::supervisor::TaskCourse;
using atl::supervisor::TaskEffects;
using atl::supervisor::TaskId;
namespace task = atl::supervisor::task;

template <class E>
std::vector<E> all_of(const TaskEffects& out) {
  std::vector<E> got;
  for (const auto& e : out)
    if (const auto* x = std::get_if<E>(&e)) got.push_back(*x);
  return got;
}

TEST(TaskCourse, AStartIsAnsweredOnceTheTaskStartedAndItsWaitsAtItsEnd) {
  TaskCourse course;
  TaskEffects out;
  const TaskId id = course.start(0, -1, "pod-0", "echo hi", 7, out).id;
  ASSERT_EQ(all_of<task::ArmStartTimer>(out).size(), 1u);
  EXPECT_EQ(all_of<task::ArmStartTimer>(out)[0].task, id);
  EXPECT_EQ(all_of<task::ArmStartTimer>(out)[0].after, TaskCourse::kStartTimeout);
  EXPECT_FALSE(course.answer_now(id, 5000));  // running: the wait waits
  out.clear();
  course.on_started(id, 321, out);
  auto answers = all_of<task::Answer>(out);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].reply, 7u);
  EXPECT_EQ(answers[0].code, ReplyCode::ok);
  EXPECT_EQ(answers[0].status.pid, 321);
  EXPECT_TRUE(answers[0].status.started);
  out.clear();
  course.await(id, 8, std::chrono::seconds(5), out);
  course.await(id, 9, std::chrono::seconds(5), out);
  out.clear();
  course.on_note(id, "result 42", out);
  course.on_exit(id, 0, 0, "", out);
  answers = all_of<task::Answer>(out);
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_EQ(answers[0].reply, 8u);
  EXPECT_EQ(answers[1].reply, 9u);
  EXPECT_TRUE(answers[0].status.done);
  EXPECT_TRUE(answers[0].status.has_result);
  EXPECT_EQ(answers[0].status.result, "42");
  ASSERT_EQ(all_of<task::Ended>(out).size(), 1u);
  EXPECT_EQ(all_of<task::Ended>(out)[0].tasks, std::vector<std::int32_t>{id});
  ASSERT_EQ(all_of<task::Say>(out).size(), 1u);
  EXPECT_EQ(all_of<task::Say>(out)[0].text, "task 1 ended: exit code 0");
  // An ended task's wait is answered now, and a late report changes nothing.
  auto now = course.answer_now(id, 5000);
  ASSERT_TRUE(now);
  EXPECT_EQ(now->code, ReplyCode::ok);
  out.clear();
  course.on_exit(id, 1, 0, "", out);
  course.on_start_timer(id, out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(course.owed(), 0u);
}

TEST(TaskCourse, ATaskThatEndsBeforeItStartsFailsItsStartSayingHow) {
  TaskCourse course;
  TaskEffects out;
  const TaskId id = course.start(0, -1, "pod-0", "nosuch", 1, out).id;
  out.clear();
  course.on_exit(id, 127, 0, "", out);
  auto answers = all_of<task::Answer>(out);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].code, ReplyCode::failed);
  EXPECT_EQ(answers[0].text,
            "task 1 ended before it started: exit code 127 (a shell's word for a command not "
            "found: check the command's first word and PATH on the pod)");
}

TEST(TaskCourse, AStartTimerFailsOnlyATaskThatNeverStarted) {
  TaskCourse course;
  TaskEffects out;
  const TaskId slow = course.start(0, -1, "pod-0", "a", 1, out).id;
  const TaskId quick = course.start(0, -1, "pod-0", "b", 2, out).id;
  course.on_started(quick, 10, out);
  out.clear();
  course.on_start_timer(quick, out);
  EXPECT_TRUE(out.empty());
  course.on_start_timer(slow, out);
  auto answers = all_of<task::Answer>(out);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].reply, 1u);
  EXPECT_EQ(answers[0].text, "task 1 did not start within 30s");
  out.clear();
  course.on_started(slow, 11, out);  // late: its start was answered already
  EXPECT_TRUE(all_of<task::Answer>(out).empty());
}

TEST(TaskCourse, AWaitsDeadlineAnswersTheTaskAsItIsOrThatTheHistoryDroppedIt) {
  TaskCourse course(1);  // one finished task kept
  TaskEffects out;
  const TaskId first = course.start(0, -1, "pod-0", "a", 1, out).id;
  course.on_started(first, 10, out);
  out.clear();
  course.await(first, 2, std::chrono::seconds(1), out);
  course.await(first, 3, std::chrono::seconds(9), out);
  auto timers = all_of<task::ArmWaitTimer>(out);
  ASSERT_EQ(timers.size(), 2u);
  out.clear();
  course.on_wait_timer(timers[0].waiter, out);
  auto answers = all_of<task::Answer>(out);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].code, ReplyCode::ok);
  EXPECT_FALSE(answers[0].status.done);
  // The wait of 9 s is answered by the end; its own timer later is nothing.
  out.clear();
  course.on_exit(first, 0, 0, "", out);
  ASSERT_EQ(all_of<task::Answer>(out).size(), 1u);
  out.clear();
  course.on_wait_timer(timers[1].waiter, out);
  EXPECT_TRUE(out.empty());
  // A second task ends: the first leaves the history, the sink forgets it.
  const TaskId second = course.start(0, -1, "pod-0", "b", 4, out).id;
  out.clear();
  course.on_exit(second, 0, 0, "", out);
  ASSERT_EQ(all_of<task::Forget>(out).size(), 1u);
  EXPECT_EQ(all_of<task::Forget>(out)[0].tasks, std::vector<std::int32_t>{first});
  auto gone = course.answer_now(first, 1000);
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->code, ReplyCode::failed);
  EXPECT_NE(gone->text.find("task 1"), std::string::npos) << gone->text;
  auto unknown = course.answer_now(99, 1000);
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->code, ReplyCode::usage);
  EXPECT_EQ(unknown->text, "no task 99");
  auto negative = course.answer_now(second, -1);
  ASSERT_TRUE(negative);
  EXPECT_EQ(negative->code, ReplyCode::usage);
}

TEST(TaskCourse, ALostPodEndsItsTasksAndTheirWaitsHearIt) {
  TaskCourse course;
  TaskEffects out;
  const TaskId there = course.start(0, -1, "pod-0", "a", 1, out).id;
  const TaskId elsewhere = course.start(0, -1, "pod-1", "b", 2, out).id;
  course.on_started(there, 10, out);
  course.on_started(elsewhere, 11, out);
  out.clear();
  course.await(there, 3, std::chrono::seconds(9), out);
  out.clear();
  course.on_pod_lost("pod-0", out);
  auto answers = all_of<task::Answer>(out);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].reply, 3u);
  EXPECT_EQ(answers[0].status.error, "pod pod-0 was lost");
  EXPECT_EQ(answers[0].status.exit_code, 255);
  EXPECT_EQ(course.book().fate(elsewhere), atl::supervisor::TaskFate::live);
}

TEST(TaskCourse, AResultOverTheLimitIsRefusedWithAReasonAndAnUnknownLineIsIgnored) {
  TaskCourse course;
  TaskEffects out;
  const TaskId id = course.start(0, -1, "pod-0", "a", 1, out).id;
  course.on_started(id, 10, out);
  out.clear();
  course.on_note(id, "hello", out);
  ASSERT_EQ(all_of<task::Say>(out).size(), 1u);
  EXPECT_TRUE(all_of<task::Say>(out)[0].warn);
  course.on_note(id, "result " + std::string(TaskCourse::kMaxResultBytes + 1, 'x'), out);
  course.on_exit(id, 0, 0, "", out);
  auto now = course.answer_now(id, 0);
  ASSERT_TRUE(now);
  EXPECT_FALSE(now->status.has_result);
  EXPECT_NE(now->status.result_error.find("over the limit"), std::string::npos);
}

TEST(TaskCourse, AbandonTellsEveryStartAndWaitWhy) {
  TaskCourse course;
  TaskEffects out;
  const TaskId a = course.start(0, -1, "pod-0", "a", 1, out).id;
  const TaskId b = course.start(0, -1, "pod-0", "b", 2, out).id;
  course.on_started(b, 10, out);
  course.await(b, 3, std::chrono::seconds(9), out);
  out.clear();
  course.abandon("the job ended (succeeded)", out);
  auto answers = all_of<task::Answer>(out);
  ASSERT_EQ(answers.size(), 2u);
  for (const auto& x : answers) {
    EXPECT_EQ(x.code, ReplyCode::failed);
    EXPECT_EQ(x.text, "the job ended (succeeded)");
  }
  EXPECT_EQ(course.owed(), 0u);
  (void)a;
}

}  // namespace
