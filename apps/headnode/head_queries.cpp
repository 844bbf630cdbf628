#include "head_queries.hpp"

#include <caf/all.hpp>
#include <future>

#include "atl/actors/messages.hpp"
#include "atl/core/metrics.hpp"

namespace atl::headnode {

namespace {

enum class Ask { status, events, log_stats, figures, progress, diagnose };

// A diagnosis waits for every node's stacks (5 s each, in parallel, and the
// supervisor's slack): longer than any other question.
constexpr auto kDiagnoseTimeout = std::chrono::seconds(30);

struct Question {
  Ask ask;
  StatusPage page;       // Ask::status
  std::int32_t run = 0;  // Ask::figures
  std::string ranks;     // Ask::diagnose
  std::promise<Expected<std::string>> answer;
  std::int32_t code = 0;  // a coded answer's code (Ask::figures)
};
using QuestionPtr = std::shared_ptr<Question>;

}  // namespace
}  // namespace atl::headnode

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(atl::headnode::QuestionPtr)

namespace atl::headnode {

struct HeadQueries::Impl {
  caf::actor asker;
  std::chrono::milliseconds timeout;

  Expected<std::string> ask(Ask what, StatusPage page = {}, std::int32_t run = 0,
                            std::int32_t* code = nullptr, std::string ranks = {}) {
    auto q = std::make_shared<Question>(Question{what, page, run, std::move(ranks), {}, 0});
    auto answer = q->answer.get_future();
    caf::anon_send(asker, q);
    // The asker's own request times out first; this is the backstop.
    const auto limit =
        what == Ask::diagnose ? std::chrono::milliseconds(kDiagnoseTimeout) : timeout;
    if (answer.wait_for(limit + std::chrono::seconds(1)) != std::future_status::ready)
      return make_error("the head's actors did not answer in time");
    auto out = answer.get();
    if (code) *code = q->code;
    return out;
  }
};

HeadQueries::HeadQueries(caf::actor_system& sys, const caf::actor& supervisor,
                         const caf::actor& sink, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>()) {
  impl_->timeout = timeout;
  impl_->asker = sys.spawn([supervisor, sink,
                            timeout](caf::event_based_actor* self) -> caf::behavior {
    return {[self, supervisor, sink, timeout](QuestionPtr& q) {
      auto ok = [q](std::string& text) { q->answer.set_value(std::move(text)); };
      auto failed = [q](const char* who) {
        return [q, who](caf::error& err) {
          q->answer.set_value(
              make_error(std::string(who) + " did not answer: " + caf::to_string(err)));
        };
      };
      switch (q->ask) {
        case Ask::status:
          self->request(supervisor, timeout, info_atom::value, q->page)
              .then(ok, failed("the supervisor"));
          break;
        case Ask::events:
          self->request(supervisor, timeout, events_atom::value).then(ok, failed("the supervisor"));
          break;
        case Ask::figures:
        case Ask::diagnose: {
          auto coded = [q](std::int32_t code, std::string& text) {
            q->code = code;  // read after the future: set before the value
            q->answer.set_value(std::move(text));
          };
          if (q->ask == Ask::figures)
            self->request(supervisor, timeout, figures_atom::value, q->run)
                .then(coded, failed("the supervisor"));
          else
            self->request(supervisor, kDiagnoseTimeout, Diagnose{q->ranks, false})
                .then(coded, failed("the supervisor"));
          break;
        }
        case Ask::progress:
          self->request(supervisor, timeout, progress_atom::value)
              .then(ok, failed("the supervisor"));
          break;
        case Ask::log_stats:
          self->request(sink, timeout, metrics_atom::value).then(ok, failed("the log sink"));
          break;
      }
    }};
  });
}

HeadQueries::~HeadQueries() { caf::anon_send_exit(impl_->asker, caf::exit_reason::user_shutdown); }

Expected<std::string> HeadQueries::status(StatusPage page) { return impl_->ask(Ask::status, page); }
Expected<std::string> HeadQueries::events() { return impl_->ask(Ask::events); }

Expected<std::string> HeadQueries::run_figures(std::int32_t run, bool* missing) {
  std::int32_t code = 0;
  auto out = impl_->ask(Ask::figures, {}, run, &code);
  if (missing) *missing = out && code != 0;
  if (out && code != 0) return make_error(*out);
  return out;
}
Expected<std::string> HeadQueries::log_stats() { return impl_->ask(Ask::log_stats); }
Expected<std::string> HeadQueries::progress() { return impl_->ask(Ask::progress); }

Expected<std::string> HeadQueries::diagnose(const std::string& ranks, std::int32_t* code) {
  return impl_->ask(Ask::diagnose, {}, 0, code, ranks);
}

Expected<std::string> HeadQueries::prometheus() {
  // Rank figures come from the counts: no rank list (32,000 at scale).
  auto status = impl_->ask(Ask::status, StatusPage{0, 0, 0, -1, 0, 0});
  if (!status) return status;
  auto logs = impl_->ask(Ask::log_stats);
  if (!logs) return logs;
  auto progress = impl_->ask(Ask::progress);
  if (!progress) return progress;
  return prometheus_text(*status, *logs, *progress);
}

}  // namespace atl::headnode
