#include "atl/os/ray_install.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/atl-ray-install-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf " + path).c_str()); }
  std::string file(const std::string& name, const std::string& text, mode_t mode = 0755) const {
    const std::string p = path + "/" + name;
    std::ofstream(p) << text;
    ::chmod(p.c_str(), mode);
    return p;
  }
};

// PYTHONPATH for the checks' Python (and no user site: a ray of this
// machine's user is not the test's), put back after.
struct PythonPath {
  explicit PythonPath(const std::string& dir) {
    ::setenv("PYTHONPATH", dir.c_str(), 1);
    ::setenv("PYTHONNOUSERSITE", "1", 1);
  }
  ~PythonPath() {
    ::unsetenv("PYTHONPATH");
    ::unsetenv("PYTHONNOUSERSITE");
  }
};

TEST(CheckRay, AMissingRayIsNamed) {
  auto r = atl::os::check_ray("/nonexistent/ray");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "'/nonexistent/ray' is not there (or not an executable file)");
  auto bare = atl::os::check_ray("no-such-ray-program-here");
  ASSERT_FALSE(bare.ok());
  EXPECT_EQ(bare.error(), "'no-such-ray-program-here' is not there (not on the PATH)");
}

TEST(CheckRay, AFileThatIsNotExecutableIsNotRay) {
  TempDir d;
  auto r = atl::os::check_ray(d.file("ray", "#!/usr/bin/python3\n", 0644));
  EXPECT_FALSE(r.ok());
}

TEST(CheckRay, APythonScriptWhosePythonHasNoRayModuleIsRefused) {
  TempDir d;
  PythonPath none(d.path + "/empty");
  const std::string ray = d.file("ray", "#!/usr/bin/python3\nimport ray\n");
  auto r = atl::os::check_ray(ray);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "'" + ray + "' runs /usr/bin/python3, which has no ray module");
}

TEST(CheckRay, APythonScriptWhosePythonFindsRayIsTakenWithoutImportingIt) {
  TempDir d;
  ::mkdir((d.path + "/site").c_str(), 0755);
  ::mkdir((d.path + "/site/ray").c_str(), 0755);
  // Importing it would fail: find_spec only looks.
  d.file("site/ray/__init__.py", "raise SystemExit(7)\n", 0644);
  PythonPath site(d.path + "/site");
  auto r = atl::os::check_ray(d.file("ray", "#!/usr/bin/python3\n"));
  EXPECT_TRUE(r.ok()) << r.error();
}

TEST(CheckRay, AScriptWhosePythonIsGoneIsNamed) {
  TempDir d;
  const std::string ray = d.file("ray", "#!" + d.path + "/venv/bin/python3\n");
  auto r = atl::os::check_ray(ray);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "'" + ray + "' runs " + d.path + "/venv/bin/python3, which is not there");
}

TEST(CheckRay, AWrapperThatIsNotAPythonScriptIsTakenAsItIs) {
  TempDir d;
  EXPECT_TRUE(atl::os::check_ray(d.file("ray", "#!/bin/sh\nexec conda run ray \"$@\"\n")).ok());
  EXPECT_TRUE(atl::os::check_ray(d.file("ray2", "#!/usr/bin/env python3\n")).ok());
}

TEST(ScriptPython, OnlyAnAbsolutePythonOnTheFirstLine) {
  TempDir d;
  EXPECT_EQ(atl::os::script_python(d.file("a", "#!/opt/venv/bin/python3\n")),
            "/opt/venv/bin/python3");
  EXPECT_EQ(atl::os::script_python(d.file("b", "#! /usr/bin/python3.11 -E\nx\n")),
            "/usr/bin/python3.11");
  EXPECT_EQ(atl::os::script_python(d.file("c", "#!/usr/bin/env python3\n")), "");
  EXPECT_EQ(atl::os::script_python(d.file("d", "#!/bin/bash\n")), "");
  EXPECT_EQ(atl::os::script_python(d.file("e",
                                          "\x7f"
                                          "ELF")),
            "");
  EXPECT_EQ(atl::os::script_python(d.path + "/missing"), "");
}

}  // namespace
