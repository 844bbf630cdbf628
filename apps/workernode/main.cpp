// workernode: a worker pod's process (workernode_main.cpp).
#include "workernode_main.hpp"

int main(int argc, char** argv) { return atl::workernode::main(argc, argv); }
