// Where each rank stands in its collectives, from PyTorch's flight recorder,
// and who a hung job waits on: "ranks 0,1 wait in all_reduce #11 on the
// default group; rank 2 never entered it". Pure text in, plain data out:
// tested on dumps recorded from a real torch (tests/unit/data/flight_recorder,
// made by record.py there). The dump comes from atl's hook in the rank
// (os/flight_recorder.hpp); a bare torch dump (`_dump_fr_trace_json`,
// `_dump_nccl_trace_json`, format versions 2.x) is read too.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "atl/core/expected.hpp"
#include "atl/core/stacks.hpp"

namespace atl {

// One process group as one rank saw it.
struct GroupProgress {
  std::string id;               // torch's pg id: "0" is the default group
  std::string name;             // "default_pg", "undefined", a user's group_desc
  std::int64_t enqueued = -1;   // the last collective it entered (sequence number)
  std::int64_t completed = -1;  // the last one that finished on this rank
  std::string op;               // what `enqueued` is: "all_reduce", "broadcast", "barrier"
  bool operator==(const GroupProgress& o) const {
    return id == o.id && name == o.name && enqueued == o.enqueued && completed == o.completed &&
           op == o.op;
  }
};

struct RankCollectives {
  std::string torch;                  // the rank's torch version
  std::vector<GroupProgress> groups;  // by id
  bool operator==(const RankCollectives& o) const { return torch == o.torch && groups == o.groups; }
};

// A flight record (atl's hook's JSON, or a bare torch dump) condensed; an
// error names what is wrong ("not JSON", "torch 1.13.1 has no flight
// recorder", "the flight recorder is off: TORCH_FR_BUFFER_SIZE=0").
Expected<RankCollectives> parse_flight_record(std::string_view text);

// The condensed form, as a node sends it to the head, and back.
std::string to_json(const RankCollectives& r);
Expected<RankCollectives> parse_collectives(std::string_view json);

struct CollectiveDiagnosis {
  // Ranks the others wait on: behind in a group where others wait and in no
  // collective themselves (else, a cycle, every rank behind), or alone in
  // another collective at the same sequence number. Ascending.
  std::vector<std::int32_t> culprits;
  // One finding a group, the default group first: "ranks 0,1 wait in
  // all_reduce #11 on the default group; rank 2 never entered it".
  std::vector<std::string> findings;
  std::vector<std::int32_t> without_record;  // ranks asked with no record
};

// The ranks' records side by side; `asked` are every rank of the job (those
// missing from `records` are without a record).
CollectiveDiagnosis diagnose_collectives(const std::map<std::int32_t, RankCollectives>& records,
                                         const std::vector<std::int32_t>& asked);

// The verdict's words: the findings, then where each culprit is (at most
// two, from `where`: "rank 2 in sleep (skip.py)", "rank 1's DataLoader
// worker 0 in ..."), then the ranks without a record.
std::string collective_reason(const CollectiveDiagnosis& d,
                              const std::map<std::int32_t, std::string>& where);

// The stacks' diagnosis refined by the ranks' records: where the records
// name culprits, they are the outliers and the line is theirs, each
// culprit's place taken from its stack; otherwise the stacks' outliers
// stand and the records' findings are added to their line.
StackDiagnosis with_collectives(StackDiagnosis stacks, const std::vector<RankStack>& ranks,
                                const CollectiveDiagnosis& c);

}  // namespace atl
