// Ray as the image has it, checked without starting it. `ray --version` (what
// the head ran before) is a Python start with Ray imported: ~0.8 s of CPU at
// every ray-mode head's start, before anything else, on the cores Ray's own
// start then shares.
#pragma once

#include <string>

#include "atl/core/expected.hpp"

namespace atl::os {

// `ray_bin` (a path, or a name looked up on PATH) is an executable; when it is
// a Python script (pip's console script: `#!/.../python3`), that Python finds
// the `ray` package (importlib's find_spec: nothing of Ray is imported). A
// `ray` that is not a Python script (a wrapper) is taken as it is. The error
// says what is missing.
Status check_ray(const std::string& ray_bin);

// The interpreter a script's `#!` line names when it is a Python given by an
// absolute path ("#!/usr/bin/env python3" and others: empty).
std::string script_python(const std::string& path);

}  // namespace atl::os
