// workernode's main, as a function: the workernode executable calls it, and
// headnode --local-workers calls it in the pods it forks before its own
// threads start (local_pods.hpp): a local pod then loads no libraries of its
// own, the head's are already there.
#pragma once

namespace atl::workernode {

// Runs a worker pod with workernode's command line (argv[0] its name) and
// returns its exit code (workernode --help lists them).
int main(int argc, char** argv);

}  // namespace atl::workernode
