// Shell quoting: turns an argv (everything after `--`) into one /bin/sh command.
#pragma once

#include <string>
#include <vector>

namespace atl {

// Leaves plain words alone and single-quotes the rest: ab c'd -> ab 'c'\''d'.
std::string shell_quote(const std::string& word);
std::string shell_join(const std::vector<std::string>& words);

// The command a user meant by the words after `--` (or atlctl run's words): one
// word is a shell command line as typed ("ps -ef | grep x"); several words are
// an argv, each quoted (python -c "print(1)").
std::string command_from_words(const std::vector<std::string>& words);

}  // namespace atl
