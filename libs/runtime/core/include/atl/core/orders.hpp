// What the head tells a pod's node agent and its own log sink, each order a
// typed message of its own (inspect() in atl/actors/messages.hpp). The
// supervisor's effects carry these values, so its shell sends them as they
// are instead of spelling each message out.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "atl/core/log_stream.hpp"
#include "atl/core/process_messages.hpp"

namespace atl {

// To a joined pod's node agent (accepted only from the head it joined).
namespace agent_order {
struct Fence {  // declared lost while silent: if it ever wakes, it kills its ranks and leaves
  std::string why;
};
struct Delete {  // the pod leaves at once (atlctl delete, a lost GPU), to be recreated
  std::string why;
};
struct Launch {  // this attempt's processes on the pod (the pre-flight is over)
  std::vector<ProcessLaunch> ranks;
};
struct Run {  // a task's or a debug run's processes on the pod
  std::vector<ProcessLaunch> ranks;
};
struct StopStream {  // a task's or run's processes: SIGTERM, SIGKILL after grace_ms
  StreamId stream;
  std::int64_t grace_ms = 0;
};
struct StopRanks {  // every process of user code on the pod: SIGTERM, SIGKILL after grace_ms
  std::int64_t grace_ms = 0;
};
struct Shutdown {  // the job ended (0 ok, 1 not): stop everything and leave
  std::int32_t code = 0;
};
}  // namespace agent_order

// To the head's log sink (same process).
namespace sink_order {
struct Print {  // the head's output (stdout, head.log)
  std::string line;
};
struct NewAttempt {  // each attempt's output in files of its own, from now on
  std::int32_t attempt = 0;
};
struct KeepFile {  // a file of the attempt's log dir (a hang's flight record)
  std::int32_t attempt = 0;
  std::string name;
  std::string text;
};
struct StreamsEnded {  // these tasks or runs ended: their series leave /metrics (folded)
  StreamKind kind = StreamKind::task;
  std::vector<std::int32_t> ids;
};
struct ForgetStreams {  // the history dropped these tasks or runs: their files go too
  StreamKind kind = StreamKind::task;
  std::vector<std::int32_t> ids;
};

template <class T>
constexpr bool is_order =
    std::is_same_v<T, Print> || std::is_same_v<T, NewAttempt> || std::is_same_v<T, KeepFile> ||
    std::is_same_v<T, StreamsEnded> || std::is_same_v<T, ForgetStreams>;
}  // namespace sink_order

}  // namespace atl
