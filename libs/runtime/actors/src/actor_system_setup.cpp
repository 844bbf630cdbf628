#include "atl/actors/actor_system_setup.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>
#include <chrono>

#include "atl/actors/exit_words.hpp"
#include "atl/actors/interposition.hpp"
#include "atl/actors/messages.hpp"
#include "atl/os/reach_probe.hpp"

namespace atl {

bool openssl_error_queue_fix_linked();  // openssl_interpose.cpp
bool basp_spawn_server_skip_linked();   // basp_interpose.cpp
bool node_id_salt_linked();             // node_id_interpose.cpp

void add_atl_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<StreamId>("atl::StreamId");
  cfg.add_message_type<std::vector<StreamId>>("std::vector<atl::StreamId>");
  cfg.add_message_type<NodeInfo>("atl::NodeInfo");
  cfg.add_message_type<NodeToolRequest>("atl::NodeToolRequest");
  cfg.add_message_type<GroupRequest>("atl::GroupRequest");
  cfg.add_message_type<TaskRequest>("atl::TaskRequest");
  cfg.add_message_type<StatusPage>("atl::StatusPage");
  cfg.add_message_type<PreflightRequest>("atl::PreflightRequest");
  cfg.add_message_type<PreflightReply>("atl::PreflightReply");
  cfg.add_message_type<StopWait>("atl::StopWait");
  cfg.add_message_type<RunCommand>("atl::RunCommand");
  cfg.add_message_type<RunWait>("atl::RunWait");
  cfg.add_message_type<Recover>("atl::Recover");
  cfg.add_message_type<Diagnose>("atl::Diagnose");
  cfg.add_message_type<DeletePods>("atl::DeletePods");
  cfg.add_message_type<GroupWait>("atl::GroupWait");
  cfg.add_message_type<GroupRemove>("atl::GroupRemove");
  cfg.add_message_type<TaskWait>("atl::TaskWait");
  cfg.add_message_type<TaskKill>("atl::TaskKill");
  cfg.add_message_type<StateWatch>("atl::StateWatch");
  cfg.add_message_type<ActorCall>("atl::ActorCall");
  cfg.add_message_type<ActorClose>("atl::ActorClose");
  cfg.add_message_type<StackRequest>("atl::StackRequest");
  cfg.add_message_type<HostCall>("atl::HostCall");
  cfg.add_message_type<HostReply>("atl::HostReply");
  cfg.add_message_type<HostPing>("atl::HostPing");
  cfg.add_message_type<LogRead>("atl::LogRead");
  cfg.add_message_type<LogChunks>("atl::LogChunks");
  cfg.add_message_type<ProcessLaunch>("atl::ProcessLaunch");
  cfg.add_message_type<JoinReply>("atl::JoinReply");
  cfg.add_message_type<KeptOutput>("atl::KeptOutput");
  cfg.add_message_type<PodHeartbeat>("atl::PodHeartbeat");
  cfg.add_message_type<PodProgress>("atl::PodProgress");
  cfg.add_message_type<PodGpuFault>("atl::PodGpuFault");
  cfg.add_message_type<agent_order::Fence>("atl::agent_order::Fence");
  cfg.add_message_type<agent_order::Delete>("atl::agent_order::Delete");
  cfg.add_message_type<agent_order::Launch>("atl::agent_order::Launch");
  cfg.add_message_type<agent_order::Run>("atl::agent_order::Run");
  cfg.add_message_type<agent_order::StopStream>("atl::agent_order::StopStream");
  cfg.add_message_type<agent_order::StopRanks>("atl::agent_order::StopRanks");
  cfg.add_message_type<agent_order::Shutdown>("atl::agent_order::Shutdown");
  cfg.add_message_type<sink_order::Print>("atl::sink_order::Print");
  cfg.add_message_type<sink_order::NewAttempt>("atl::sink_order::NewAttempt");
  cfg.add_message_type<sink_order::KeepFile>("atl::sink_order::KeepFile");
  cfg.add_message_type<sink_order::StreamsEnded>("atl::sink_order::StreamsEnded");
  cfg.add_message_type<sink_order::ForgetStreams>("atl::sink_order::ForgetStreams");
  cfg.add_message_type<ProcessExit>("atl::ProcessExit");
  cfg.add_message_type<ProcessStarted>("atl::ProcessStarted");
  cfg.add_message_type<ProcessNote>("atl::ProcessNote");
  cfg.add_message_type<ProcessReports>("atl::ProcessReports");
  cfg.add_message_type<RunStatus>("atl::RunStatus");
  cfg.add_message_type<TaskStatus>("atl::TaskStatus");
  cfg.add_message_type<std::vector<ProgressReport>>("std::vector<atl::ProgressReport>");
  cfg.add_message_type<std::vector<StackReport>>("std::vector<atl::StackReport>");
  // read_many's offsets (std::vector<std::string> is CAF's own).
  cfg.add_message_type<std::vector<std::int32_t>>("std::vector<int32_t>");
  cfg.add_message_type<std::vector<std::int64_t>>("std::vector<int64_t>");
}

AtlSystemConfig::AtlSystemConfig(const std::optional<os::TlsFiles>& tls) {
  load<caf::io::middleman>();
  if (tls) {
    // All three set: CAF's session then requires and verifies the peer's
    // certificate on both sides (SSL_VERIFY_PEER | FAIL_IF_NO_PEER_CERT).
    if (!openssl_error_queue_fix_linked()) throw std::logic_error("TLS without its fix");
    load<caf::openssl::manager>();
    openssl_certificate = tls->cert;
    openssl_key = tls->key;
    openssl_cafile = tls->ca;
    secure_ = true;
  }
  if (!basp_spawn_server_skip_linked()) throw std::logic_error("CAF without its leak fix");
  if (!node_id_salt_linked()) throw std::logic_error("CAF without distinct local pods");
  // Linked is not bound: each replacement is checked in its caller's
  // relocations, and one that does not hold is said now (interposition.hpp).
  interposition_report();
  add_atl_message_types(*this);
  // A shared queue with blocking workers: work stealing polls while idle, and
  // on the 2-core pods of small jobs that polling competes with the ranks.
  set("scheduler.policy", caf::atom("sharing"));
  // BASP messages are deserialized on the multiplexer's own thread, in the
  // order they came, not by CAF 0.17's worker pool beside it: with 60 atlctl
  // calls at once, 1-2% of the replies never reached their caller (the
  // supervisor had seen every request; measured here: 17 of 480 lost with
  // the default pool of one worker, 0 of 1,680 without). Throughput of the
  // log path unchanged (bench/logs: 1.44x of a plain file vs 1.58x, noise).
  set("middleman.workers", size_t{0});
  // Without heartbeats a frozen or partitioned peer is never reported down.
  set("middleman.heartbeat-interval", caf::timespan{std::chrono::seconds(1)});
  set("middleman.connection-timeout", caf::timespan{std::chrono::seconds(20)});
}

caf::expected<std::uint16_t> publish_actor(caf::actor_system& sys, const caf::actor& actor,
                                           std::uint16_t port, const std::string& bind) {
  if (sys.has_openssl_manager()) return caf::openssl::publish(actor, port, bind.c_str(), true);
  return caf::io::publish(actor, port, bind.c_str(), true);
}

namespace {

caf::expected<caf::actor> connect_once(caf::actor_system& sys, const std::string& host,
                                       std::uint16_t port) {
  if (sys.has_openssl_manager()) return caf::openssl::remote_actor(sys, host, port);
  return caf::io::remote_actor(sys, host, port);
}

}  // namespace

// CAF 0.17's BASP broker makes a connecting side's endpoint context with
// last_seen at the clock's epoch (its connect handler default-constructs it;
// only received bytes set it), and its heartbeat tick, every
// heartbeat-interval from the system's start, drops every connection whose
// last_seen + connection-timeout has passed. So a connect whose handshake is
// still awaited when a tick comes fails with sec::connection_timeout, however
// young it is: an atlctl against a head busy accepting 1,500 connections
// failed so after ~1 s (its first tick), and any connect spanning a tick
// (a rejoin, a driver's) could. A retry starts just after the tick that
// ended the last try, so it has a whole interval; a head that never finishes
// the handshake (frozen) ends the tries after `patience`.
caf::expected<caf::actor> connect_actor(caf::actor_system& sys, const std::string& host,
                                        std::uint16_t port, std::chrono::milliseconds patience) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (true) {
    auto found = connect_once(sys, host, port);
    if (found || found.error() != caf::sec::connection_timeout ||
        std::chrono::steady_clock::now() >= deadline)
      return found;
  }
}

std::string describe_exception(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

std::string describe_connect_error(caf::actor_system& sys, const caf::error& err,
                                   const std::string& host, std::uint16_t port) {
  if (err == caf::sec::connection_timeout)
    return "it took the connection but did not finish the handshake in time (busy or frozen)";
  // A certificate refused while the peer answers at once fails inside CAF's
  // first handshake step: that reads as cannot_connect_to_node, the same as
  // nothing listening. A plain TCP connect tells the two apart.
  const bool listening = err == caf::sec::cannot_connect_to_node &&
                         os::probe_connect(host, port, std::chrono::seconds(1)).ok();
  if (err == caf::sec::disconnect_during_handshake || listening)
    return sys.has_openssl_manager()
               ? "the peer refused this process's TLS certificate or does not speak TLS: "
                 "check --tls-dir / ATL_TLS_DIR"
               : "the handshake failed: the peer may require TLS (this process runs with "
                 "--insecure)";
  if (err == caf::sec::cannot_connect_to_node)
    return "nothing answers there (the job's head ended, or the address is wrong)";
  return "the connection failed: " + error_words(err, sys);
}

}  // namespace atl
