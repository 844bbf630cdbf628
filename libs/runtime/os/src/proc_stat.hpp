// This process's /proc/self/stat, field by field (os-internal).
#pragma once

#include <string>
#include <vector>

namespace atl::os {

// The fields after the name: [0] is field 3 (the state), [17] field 20
// (threads), [45] and [46] fields 48 and 49 (the arguments' area). Empty
// when the file cannot be read. The name, field 2, may hold spaces and
// parentheses: the fields start after its last ')'.
std::vector<std::string> own_stat_fields();

}  // namespace atl::os
