// Connections to a Ceph cluster: the client's own, and one per CRUSH host for
// reads sent to the replica on that host.
//
// librados lets a read go to a replica only by locality: with
// OPERATION_LOCALIZE_READS the client's objecter sends it to the member of the
// object's acting set nearest the client's crush_location (the primary when
// none is nearer). A client told it is on host H therefore reads from H's
// replica whenever the object has one there. Ceph still checks every such
// read: a replica with a write in flight on the object sends it back, and the
// objecter retries at the primary. Only reading operations may go this way: a
// replica refuses anything that writes.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <rados/librados.hpp>

namespace skyhook_client {

struct ClusterSettings {
  std::string conf, pool, name_space, user;
  std::optional<std::string> keyring;
  int timeout_seconds;
};

// Connects cluster and opens io as settings say, with any further options;
// (0, "") or (negative errno, what failed). Blocking: call without the GIL.
inline std::pair<int, std::string> Connect(
    const ClusterSettings& settings,
    const std::vector<std::pair<std::string, std::string>>& options, librados::Rados& cluster,
    librados::IoCtx& io) {
  int code = cluster.init2(("client." + settings.user).c_str(), "ceph", 0);
  if (code < 0) return {code, "initialising librados"};
  if ((code = cluster.conf_read_file(settings.conf.c_str())) < 0)
    return {code, "reading " + settings.conf};
  if (settings.keyring && (code = cluster.conf_set("keyring", settings.keyring->c_str())) < 0) {
    return {code, "setting keyring"};
  }
  // Without an OSD operation timeout a call to a placement group whose OSDs
  // are all down waits for ever; with one it fails with ETIMEDOUT.
  std::string timeout = std::to_string(settings.timeout_seconds);
  for (const char* option :
       {"client_mount_timeout", "rados_mon_op_timeout", "rados_osd_op_timeout"}) {
    if ((code = cluster.conf_set(option, timeout.c_str())) < 0)
      return {code, std::string("setting ") + option};
  }
  for (const auto& [option, value] : options) {
    if ((code = cluster.conf_set(option.c_str(), value.c_str())) < 0)
      return {code, "setting " + option};
  }
  if ((code = cluster.connect()) < 0)
    return {code, "connecting to the cluster of " + settings.conf};
  if ((code = cluster.ioctx_create(settings.pool.c_str(), io)) < 0)
    return {code, "opening pool " + settings.pool};
  io.set_namespace(settings.name_space);
  return {0, ""};
}

// One connection per CRUSH host, made on first use and kept until Close().
class HostClients {
 public:
  explicit HostClients(ClusterSettings settings) : settings_(std::move(settings)) {}
  HostClients(const HostClients&) = delete;
  HostClients& operator=(const HostClients&) = delete;
  ~HostClients() { Close(); }

  // The I/O context whose reads (with LOCALIZE_READS) prefer host's replica;
  // nullptr with what failed when it cannot connect. Blocking: call without the GIL.
  std::pair<librados::IoCtx*, std::string> For(const std::string& host) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = clients_.find(host);
    if (found != clients_.end()) return {&found->second->io, ""};
    auto client = std::make_unique<Client>();
    // One messenger thread: each of these connections mostly talks to one OSD.
    auto [code, failure] =
        Connect(settings_, {{"crush_location", "host=" + host}, {"ms_async_op_threads", "1"}},
                client->cluster, client->io);
    if (code < 0) {
      client->cluster.shutdown();
      return {nullptr, failure + " for host " + host + ": error " + std::to_string(-code)};
    }
    librados::IoCtx* io = &client->io;
    clients_.emplace(host, std::move(client));
    return {io, ""};
  }

  void Close() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [host, client] : clients_) {
      client->io.close();
      client->cluster.shutdown();
    }
    clients_.clear();
  }

 private:
  struct Client {
    librados::Rados cluster;
    librados::IoCtx io;
  };
  ClusterSettings settings_;
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Client>> clients_;
};

}  // namespace skyhook_client
