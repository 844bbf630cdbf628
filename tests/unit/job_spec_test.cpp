#include "atl/core/job_spec.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <regex>

#include "atl/core/byte_size.hpp"
#include "param_name.hpp"

using namespace std::chrono_literals;

TEST(JobSpecJson, ReadsEveryField) {
  auto spec = atl::parse_job_spec_json(R"({
    "job_id": "jo-abc", "mode": "driver", "entrypoint": "python3 train.py",
    "workers": 3, "nproc_per_node": 2, "env": {"A": "1", "N": "4"},
    "runtime_env": {"env_vars": {"A": "2"}, "working_dir": "/tmp"},
    "spec": {"cpus": 8, "gpus": 2, "memory": "16Gi", "shm": 1024},
    "ready_timeout": "5m", "master_port": 29600, "grace": "3s",
    "max_restarts": 4, "restart_on_failure": true,
    "heartbeat_interval": "200ms", "heartbeat_timeout": "2s",
    "hang_timeout": "90s", "on_hang": "report", "ray_ready_timeout": "45s",
    "tensorboard": "/data/tb"
  })");
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_EQ(spec->job_id, "jo-abc");
  EXPECT_EQ(spec->mode, atl::JobMode::driver);
  EXPECT_EQ(spec->entrypoint, "python3 train.py");
  EXPECT_EQ(spec->workers, 3);
  EXPECT_EQ(spec->nproc_per_node, 2);
  EXPECT_EQ(spec->env.at("A"), "1");
  EXPECT_EQ(spec->env.at("N"), "4");
  EXPECT_EQ(spec->runtime_env_vars.at("A"), "2");
  EXPECT_EQ(spec->working_dir, "/tmp");
  EXPECT_EQ(spec->node_spec.cpus, 8);
  EXPECT_EQ(spec->node_spec.gpus, 2);
  EXPECT_EQ(spec->node_spec.memory, 16LL << 30);
  EXPECT_EQ(spec->node_spec.shm, 1024);
  EXPECT_EQ(spec->ready_timeout, 5min);
  EXPECT_EQ(spec->master_port, 29600);
  EXPECT_EQ(spec->grace, 3s);
  EXPECT_EQ(spec->max_restarts, 4);
  EXPECT_TRUE(spec->restart_on_failure);
  EXPECT_EQ(spec->heartbeat.interval, 200ms);
  EXPECT_EQ(spec->heartbeat.timeout, 2s);
  EXPECT_EQ(spec->hang_timeout, 90s);
  EXPECT_EQ(spec->on_hang, atl::OnHang::report);
  EXPECT_EQ(spec->ray_ready_timeout, 45s);
  EXPECT_EQ(spec->tensorboard_logdir, "/data/tb");
  EXPECT_TRUE(atl::JobSpec{}.tensorboard_logdir.empty());  // no TensorBoard unless asked
  EXPECT_EQ(atl::JobSpec{}.ray_ready_timeout, 2min);
  EXPECT_TRUE(atl::validate_job_spec(*spec).ok());
}

TEST(JobSpecJson, TheHangWatchIsOnByDefaultAndZeroTurnsItOff) {
  atl::JobSpec defaults;
  EXPECT_EQ(defaults.hang_timeout, 5min);
  EXPECT_EQ(defaults.on_hang, atl::OnHang::restart);
  auto off = atl::parse_job_spec_json(R"({"hang_timeout": "0"})");
  ASSERT_TRUE(off.ok()) << off.error();
  EXPECT_EQ(off->hang_timeout.count(), 0);
}

TEST(JobSpecJson, TheLearnedTimeoutsFactorAndTheStragglerPolicy) {
  atl::JobSpec defaults;
  EXPECT_EQ(defaults.hang_factor, 4);
  EXPECT_EQ(defaults.on_straggler, atl::OnStraggler::report);
  auto spec = atl::parse_job_spec_json(
      R"({"job_id": "jo-k", "entrypoint": "true", "hang_factor": 2.5, "on_straggler": "taint"})");
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_EQ(spec->hang_factor, 2.5);
  EXPECT_EQ(spec->on_straggler, atl::OnStraggler::taint);
  EXPECT_TRUE(atl::validate_job_spec(*spec).ok());
  spec->hang_factor = 101;
  EXPECT_EQ(atl::validate_job_spec(*spec).error(),
            "job spec: field 'hang_factor' must be between 0 (no learned timeout) and 100");
  EXPECT_EQ(*atl::parse_hang_factor("0"), 0);
  EXPECT_EQ(*atl::parse_hang_factor("4"), 4);
  for (const char* bad : {"", "x", "-1", "4x", "1e9", "nan"})
    EXPECT_EQ(atl::parse_hang_factor(bad).error(),
              std::string("bad factor '") + bad +
                  "': expected a number from 0 (no learned timeout) to 100, e.g. 4")
        << bad;
  EXPECT_EQ(atl::parse_on_straggler("panic").error(),
            "bad on_straggler 'panic': expected report or taint");
}

TEST(JobSpecJson, AStopWarningIsASignalAndALeadAsSlurmWritesIt) {
  auto w = atl::parse_stop_warning("USR1@30s");
  ASSERT_TRUE(w.ok()) << w.error();
  EXPECT_EQ(w->signal, SIGUSR1);
  EXPECT_EQ(w->lead, 30s);
  EXPECT_EQ(atl::to_string(*w), "USR1@30s");
  EXPECT_EQ(atl::parse_stop_warning("SIGUSR2@1m")->signal, SIGUSR2);
  EXPECT_EQ(atl::parse_stop_warning("10@5s")->signal, 10);
  EXPECT_EQ(atl::to_string(atl::StopWarning{}), "none");
  for (const auto& [bad, why] : std::vector<std::pair<std::string, std::string>>{
           {"USR1", "no '@'"},
           {"@30s", "unknown signal"},
           {"NOPE@30s", "unknown signal"},
           {"99@30s", "unknown signal"},
           {"KILL@30s", "SIGKILL and SIGSTOP cannot be caught: pick one a rank can handle"},
           {"SIGSTOP@1s", "SIGKILL and SIGSTOP cannot be caught: pick one a rank can handle"},
           {"USR1@0s", "the time must be above 0"},
           {"USR1@soon", "bad duration 'soon'"}}) {
    auto r = atl::parse_stop_warning(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().find("bad stop signal '" + bad + "': " + why), std::string::npos)
        << r.error();
    EXPECT_NE(r.error().find("(SIG@TIME, e.g. USR1@30s)"), std::string::npos) << r.error();
  }
  auto spec = atl::parse_job_spec_json(R"({"stop_signal": "USR2@20s"})");
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_EQ(spec->stop_warning.signal, SIGUSR2);
  EXPECT_FALSE(atl::parse_job_spec_json(R"({"stop_signal": "KILL@1s"})").ok());
}

TEST(JobSpecJson, AbsentFieldsKeepTheBase) {
  atl::JobSpec base;
  base.workers = 7;
  auto spec = atl::parse_job_spec_json(R"({"entrypoint": "true"})", base);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->workers, 7);
  EXPECT_EQ(spec->master_port, 29500);
  EXPECT_EQ(spec->ready_timeout, 300s);
  EXPECT_EQ(spec->max_restarts, 10);
  EXPECT_FALSE(spec->restart_on_failure);
  EXPECT_EQ(spec->heartbeat.interval, 500ms);
  EXPECT_EQ(spec->heartbeat.timeout, 3s);
}

struct BadField {
  const char* json;
  const char* field;  // the message must name it
};

class JobSpecJsonRejects : public testing::TestWithParam<BadField> {};

TEST_P(JobSpecJsonRejects, NamingTheField) {
  auto spec = atl::parse_job_spec_json(GetParam().json);
  ASSERT_FALSE(spec.ok()) << GetParam().json;
  EXPECT_NE(spec.error().find(GetParam().field), std::string::npos) << spec.error();
  EXPECT_EQ(spec.error().find('\n'), std::string::npos) << "one line: " << spec.error();
}

INSTANTIATE_TEST_SUITE_P(
    EveryFieldWrongInTurn, JobSpecJsonRejects,
    testing::Values(
        BadField{R"({"job_id": 5})", "'job_id'"}, BadField{R"({"mode": "mpi"})", "'mode'"},
        BadField{R"({"mode": 1})", "'mode'"}, BadField{R"({"entrypoint": ["a"]})", "'entrypoint'"},
        BadField{R"({"workers": "two"})", "'workers'"}, BadField{R"({"workers": -1})", "'workers'"},
        BadField{R"({"workers": 1.5})", "'workers'"},
        BadField{R"({"nproc_per_node": 0})", "'nproc_per_node'"},
        BadField{R"({"env": "A=1"})", "'env'"}, BadField{R"({"env": {"1A": "x"}})", "'env.1A'"},
        BadField{R"({"env": {"A": {"x": 1}}})", "'env.A'"},
        BadField{R"({"runtime_env": []})", "'runtime_env'"},
        BadField{R"({"tensorboard": 1})", "'tensorboard'"},
        BadField{R"({"tensorboard": ""})", "'tensorboard'"},
        BadField{R"({"runtime_env": {"env_vars": 3}})", "'runtime_env.env_vars'"},
        BadField{R"({"runtime_env": {"working_dir": 3}})", "'runtime_env.working_dir'"},
        BadField{R"({"runtime_env": {"pip": []}})", "'runtime_env.pip'"},
        BadField{R"({"spec": {"cpus": "many"}})", "'spec.cpus'"},
        BadField{R"({"spec": {"gpus": -2}})", "'spec.gpus'"},
        BadField{R"({"spec": {"memory": "lots"}})", "'spec.memory'"},
        BadField{R"({"spec": {"shm": true}})", "'spec.shm'"},
        BadField{R"({"spec": {"disk": 1}})", "'spec.disk'"},
        BadField{R"({"ready_timeout": "soon"})", "'ready_timeout'"},
        BadField{R"({"ready_timeout": -5})", "'ready_timeout'"},
        BadField{R"({"master_port": 70000})", "'master_port'"},
        BadField{R"({"grace": "1y"})", "'grace'"}, BadField{R"({"wrokers": 2})", "'wrokers'"},
        BadField{R"([1, 2])", "top level"}, BadField{R"({"workers": 2)", "not valid JSON"},
        BadField{R"({"workers": 2, "workers": 3})", "'workers' is given twice"},
        BadField{R"({"spec": {"cpus": 1, "cpus": 2}})", "'cpus' is given twice"},
        BadField{R"({"workers": 100001})", "'workers'"},
        BadField{R"({"nproc_per_node": 1025})", "'nproc_per_node'"},
        BadField{R"({"grace": 99999999999})", "'grace'"},
        // A bare number is no duration (10 what?); an env value is text.
        BadField{R"({"grace": 10})", "'grace' must be a duration with its unit"},
        BadField{R"({"grace": "10"})", "give a unit"},
        BadField{R"({"heartbeat_timeout": 3})", "'heartbeat_timeout'"},
        BadField{R"({"env": {"N": 4}})", "'env.N' must be a string"},
        BadField{R"({"env": {"B": true}})", "'env.B' must be a string"},
        BadField{R"({"runtime_env": {"env_vars": {"X": 1.5}}})", "'runtime_env.env_vars.X'"},
        // A NUL byte would cut the command, value or path short.
        BadField{R"({"entrypoint": "echo a\u0000b"})", "'entrypoint' holds a NUL byte"},
        BadField{R"({"env": {"A": "x\u0000y"}})", "'env.A' holds a NUL byte"},
        BadField{R"({"runtime_env": {"working_dir": "/t\u0000"}})",
                 "'runtime_env.working_dir' holds a NUL byte"},
        BadField{R"({"ready_timeout": "2562048h"})", "'ready_timeout'"},
        BadField{R"({"max_restarts": -1})", "'max_restarts'"},
        BadField{R"({"max_restarts": 10001})", "'max_restarts'"},
        BadField{R"({"max_restarts": "ten"})", "'max_restarts'"},
        BadField{R"({"restart_on_failure": "yes"})", "'restart_on_failure'"},
        BadField{R"({"heartbeat_interval": "often"})", "'heartbeat_interval'"},
        BadField{R"({"heartbeat_timeout": [3]})", "'heartbeat_timeout'"},
        BadField{R"({"hang_timeout": 300})", "'hang_timeout'"},
        BadField{R"({"hang_timeout": "soon"})", "'hang_timeout'"},
        BadField{R"({"on_hang": "panic"})", "'on_hang': bad on_hang 'panic'"},
        BadField{R"({"on_hang": true})", "'on_hang'"},
        BadField{R"({"on_straggler": "panic"})", "'on_straggler': bad on_straggler 'panic'"},
        BadField{R"({"hang_factor": "4"})", "'hang_factor' must be a number"},
        BadField{R"({"ray_ready_timeout": 120})", "'ray_ready_timeout'"},
        BadField{R"({"ray_ready_timeout": "2562048h"})", "'ray_ready_timeout'"},
        BadField{R"({"placement": "PACK"})", "'placement'"},
        BadField{R"({"placement": {"strategy": "SIDEWAYS", "bundle": {"CPU": 1}}})",
                 "'placement.strategy'"},
        BadField{R"({"placement": {"strategy": 1, "bundle": {"CPU": 1}}})", "'placement.strategy'"},
        BadField{R"({"placement": {"bundle": {"CPU": -1}}})", "'placement.bundle'"},
        BadField{R"({"placement": {"bundle": {"CPU": 0}}})", "'placement.bundle'"},
        BadField{R"({"placement": {"bundle": [1]}})", "'placement.bundle'"},
        BadField{R"({"placement": {"strategy": "SPREAD"}})", "'placement' needs a 'bundle'"},
        BadField{R"({"placement": {"bundle": {"CPU": 1}, "spread": true}})", "'placement.spread'"}),
    [](const testing::TestParamInfo<BadField>& info) {
      return atl::test::param_name(info.index, info.param.field);
    });

TEST(JobSpecJson, DeepNestingIsRefusedBeforeParsing) {
  std::string deep = "{\"env\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  auto spec = atl::parse_job_spec_json(deep);
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.error().find("nested deeper"), std::string::npos) << spec.error();
  // Brackets inside strings are text, not nesting.
  EXPECT_TRUE(atl::parse_job_spec_json(R"({"entrypoint": "echo [[[[[[[[[[[[[[[[[[[[[[["})").ok());
}

TEST(JobSpecJson, ErrorsEchoAShortPrintableValue) {
  std::string big = "{\"workers\": \"" + std::string(5 << 20, 'x') + "\"}";
  auto spec = atl::parse_job_spec_json(big);
  ASSERT_FALSE(spec.ok());
  EXPECT_LT(spec.error().size(), 300u) << spec.error().substr(0, 300);
  std::string bad_utf8 = "{\"workers\": \"caf\xe9\"}";
  auto st = atl::parse_job_spec_json(bad_utf8);
  ASSERT_FALSE(st.ok());  // invalid UTF-8: refused by the parser, never thrown
  std::string odd = "{\"mode\": \"sp\\u0001md\"}";
  auto mode = atl::parse_job_spec_json(odd);
  ASSERT_FALSE(mode.ok());
  EXPECT_NE(mode.error().find("\\x01"), std::string::npos) << mode.error();
}

TEST(ValidateJobSpec, FlagsMeetTheSameBoundsAsJson) {
  atl::JobSpec spec;
  spec.job_id = "jo-x";
  spec.entrypoint = "true";
  spec.workers = 2000000000;
  EXPECT_NE(atl::validate_job_spec(spec).error().find("'workers'"), std::string::npos);
  spec.workers = 50000;
  spec.nproc_per_node = 50000;
  EXPECT_NE(atl::validate_job_spec(spec).error().find("nproc_per_node"), std::string::npos);
  spec.nproc_per_node = 1000;  // 50 million ranks: each bound alone holds, the product does not
  EXPECT_NE(atl::validate_job_spec(spec).error().find("ranks a job may have"), std::string::npos);
  spec.workers = 8;
  spec.grace = atl::kMaxDuration + atl::Millis(1);
  EXPECT_NE(atl::validate_job_spec(spec).error().find("'grace'"), std::string::npos);
  spec.grace = 1s;
  spec.heartbeat = {1s, 1500ms};  // one late heartbeat would be a loss
  EXPECT_NE(atl::validate_job_spec(spec).error().find("at least twice the interval"),
            std::string::npos);
  spec.heartbeat = {1s, 2h};
  EXPECT_NE(atl::validate_job_spec(spec).error().find("at most 1h"), std::string::npos);
  spec.heartbeat = {};
  spec.hang_timeout = 600ms;  // sampled each heartbeat: fewer than two is no watch
  EXPECT_NE(atl::validate_job_spec(spec).error().find("'hang_timeout' must be 0 (off) or at least"),
            std::string::npos);
  spec.hang_timeout = atl::kMaxDuration + atl::Millis(1);
  EXPECT_NE(atl::validate_job_spec(spec).error().find("'hang_timeout'"), std::string::npos);
  spec.hang_timeout = 0s;
  EXPECT_TRUE(atl::validate_job_spec(spec).ok()) << atl::validate_job_spec(spec).error();
  spec.ray_ready_timeout = 0s;  // Ray could never be ready
  EXPECT_NE(atl::validate_job_spec(spec).error().find("'ray_ready_timeout' must be at least 1s"),
            std::string::npos);
  spec.ray_ready_timeout = 1s;
  EXPECT_TRUE(atl::validate_job_spec(spec).ok()) << atl::validate_job_spec(spec).error();
  spec.max_restarts = -3;
  EXPECT_NE(atl::validate_job_spec(spec).error().find("'max_restarts'"), std::string::npos);
}

TEST(ValidateJobSpec, NamesTheProblem) {
  atl::JobSpec spec;
  spec.job_id = "jo-x";
  spec.entrypoint = "true";
  EXPECT_TRUE(atl::validate_job_spec(spec).ok());

  auto broken = [&](auto change) {
    atl::JobSpec s = spec;
    change(s);
    auto st = atl::validate_job_spec(s);
    return st.ok() ? std::string() : st.error();
  };
  EXPECT_NE(broken([](auto& s) { s.entrypoint = "  "; }).find("entrypoint"), std::string::npos);
  EXPECT_NE(broken([](auto& s) { s.workers = 0; }).find("workers"), std::string::npos);
  EXPECT_NE(broken([](auto& s) { s.nproc_per_node = 0; }).find("nproc_per_node"),
            std::string::npos);
  EXPECT_NE(broken([](auto& s) {
              s.nproc_per_node = 2;
              s.node_spec.gpus = 3;
            }).find("spec.gpus"),
            std::string::npos);
  EXPECT_NE(broken([](auto& s) { s.job_id = "Jo_X"; }).find("job id"), std::string::npos);
  EXPECT_NE(broken([](auto& s) { s.job_id = "-jo"; }).find("job id"), std::string::npos);
  EXPECT_NE(broken([](auto& s) { s.ready_timeout = atl::Millis(0); }).find("ready_timeout"),
            std::string::npos);
  // A placement: spmd only, whole GPUs; it lifts the GPUs-split-evenly rule.
  auto placed = [](atl::JobSpec& s, const char* bundle) {
    auto parsed = atl::parse_job_spec_json(
        std::string(R"({"placement": {"strategy": "SPREAD", "bundle": )") + bundle + "}}", s);
    ASSERT_TRUE(parsed.ok()) << parsed.error();
    s = *parsed;
  };
  EXPECT_EQ(broken([&](auto& s) {
              placed(s, R"({"GPU": 1})");
              s.nproc_per_node = 2;
              s.node_spec.gpus = 3;
            }),
            "");
  EXPECT_NE(broken([&](auto& s) { placed(s, R"({"GPU": 0.5})"); }).find("whole GPUs"),
            std::string::npos);
  EXPECT_NE(broken([&](auto& s) {
              placed(s, R"({"CPU": 1})");
              s.mode = atl::JobMode::driver;
            }).find("'placement' places spmd ranks"),
            std::string::npos);
  // Driver mode may run with no workers at all (a head-only cluster).
  EXPECT_EQ(broken([](auto& s) {
              s.mode = atl::JobMode::driver;
              s.workers = 0;
            }),
            "");
}

TEST(JobId, LooksLikeThePlatforms) {
  std::mt19937_64 rng(42);
  std::string id = atl::make_job_id(rng);
  EXPECT_TRUE(std::regex_match(id, std::regex("jo-[a-z0-9]{16}"))) << id;
  EXPECT_NE(id, atl::make_job_id(rng));
  EXPECT_TRUE(atl::validate_job_id(id).ok());
  EXPECT_EQ(atl::worker_pod_name(id, 3), id + "-worker-3");
  EXPECT_EQ(atl::head_pod_name(id), id + "-head-0");
}

TEST(JobId, ATooLongIdIsEchoedAtMost64Characters) {
  auto st = atl::validate_job_id(std::string(1000, 'a'));
  ASSERT_FALSE(st.ok());
  EXPECT_LT(st.error().size(), 140u) << st.error();
  EXPECT_NE(st.error().find(std::string(61, 'a') + "..."), std::string::npos) << st.error();
  EXPECT_NE(st.error().find("1000 given"), std::string::npos) << st.error();
}

TEST(NodeMatchesSpec, OnlyStatedFieldsMustBeEqualAndTheErrorNamesTheField) {
  atl::NodeResources node{8, 2, 64LL << 30, 16LL << 30};
  EXPECT_TRUE(atl::check_node_matches_spec({}, node).ok()) << "a spec stating nothing";
  EXPECT_TRUE(atl::check_node_matches_spec(node, node).ok());
  EXPECT_TRUE(atl::check_node_matches_spec({8, 0, 0, 0}, node).ok());
  struct Case {
    atl::NodeResources spec;
    const char* says;
  };
  for (const Case& c :
       {Case{{4, 0, 0, 0}, "cpus: the pod has 8, the job's spec asks for 4"},
        Case{{0, 4, 0, 0}, "gpus: the pod has 2, the job's spec asks for 4"},
        Case{{0, 0, 32LL << 30, 0}, "memory: the pod has 64Gi"},
        Case{{0, 0, 0, 8LL << 30}, "shm: the pod has 16Gi, the job's spec asks for 8Gi"}}) {
    auto st = atl::check_node_matches_spec(c.spec, node);
    ASSERT_FALSE(st.ok()) << c.says;
    EXPECT_NE(st.error().find(c.says), std::string::npos) << st.error();
  }
}

// headnode --local-workers: its pods offer what the spec states, so a job
// file with a spec runs on one machine as written (and matches its check).
TEST(PodFlagsForSpec, OnlyTheFieldsTheSpecStatesInWorkernodesFlags) {
  EXPECT_TRUE(atl::pod_flags_for_spec({}).empty());
  atl::NodeResources spec;
  spec.cpus = 1;
  spec.memory = 2LL << 30;
  EXPECT_EQ(atl::pod_flags_for_spec(spec),
            (std::vector<std::string>{"--cpus", "1", "--memory", "2147483648"}));
  spec.gpus = 8;
  spec.shm = 1024;
  EXPECT_EQ(atl::pod_flags_for_spec(spec),
            (std::vector<std::string>{"--cpus", "1", "--gpus", "8", "--memory", "2147483648",
                                      "--shm", "1024"}));
  EXPECT_EQ(*atl::parse_byte_size("2147483648"), 2LL << 30);  // as workernode reads it
}
