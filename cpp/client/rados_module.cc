// The client's path into RADOS, through librados' C++ API: whole-object writes
// with their attributes in one atomic operation, copies made by the OSDs, plain reads, conditional
// writes (create-if-absent, replace or remove only at a known version), omap,
// object listing, and many object-class calls in flight at once with replies
// taken in order (reading ones, if asked, answered by a chosen host's replica:
// host_clients.h). Every blocking call releases the GIL. Failures raise
// OSError(errno, message); every operation gives up after the pool's timeout.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>
#include <rados/librados.hpp>

#include "host_clients.h"

namespace nb = nanobind;

namespace {

[[noreturn]] void RaiseOSError(int code, const std::string& what) {
  PyErr_SetObject(PyExc_OSError, nb::make_tuple(-code, what + ": " + std::strerror(-code)).ptr());
  throw nb::python_error();
}

void Check(int code, const std::string& what) {
  if (code < 0) RaiseOSError(code, what);
}

ceph::bufferlist ToBufferList(nb::bytes data) {
  ceph::bufferlist list;
  list.append(data.c_str(), data.size());
  return list;
}

nb::bytes ToBytes(ceph::bufferlist& list) {
  return nb::bytes(list.length() ? list.c_str() : "", list.length());
}

// Object-class calls in flight, answered in the order they were submitted.
class CallStream {
 public:
  CallStream(librados::IoCtx* io, skyhook_client::HostClients* hosts, std::string cls,
             std::string method)
      : io_(io), hosts_(hosts), cls_(std::move(cls)), method_(std::move(method)) {}
  CallStream(const CallStream&) = delete;
  CallStream& operator=(const CallStream&) = delete;
  ~CallStream() { Drain(); }

  // host: a CRUSH host whose replica of object should answer (the method
  // must only read); without one, or where object has no replica there, its primary.
  void Submit(const std::string& object, nb::bytes request, std::optional<std::string> host) {
    auto call = std::make_unique<Call>();
    call->object = object;
    call->completion = librados::Rados::aio_create_completion();
    ceph::bufferlist input = ToBufferList(request);
    int code;
    if (host) {
      std::pair<librados::IoCtx*, std::string> routed;
      {
        nb::gil_scoped_release release;
        routed = hosts_->For(*host);
      }
      if (routed.first == nullptr) {
        call->completion->release();
        RaiseOSError(-EHOSTUNREACH, routed.second);
      }
      librados::ObjectReadOperation operation;
      operation.exec(cls_.c_str(), method_.c_str(), input, &call->output, &call->method_code);
      code = routed.first->aio_operate(object, call->completion, &operation,
                                       librados::OPERATION_LOCALIZE_READS, nullptr);
    } else {
      code = io_->aio_exec(object, call->completion, cls_.c_str(), method_.c_str(), input,
                           &call->output);
    }
    if (code < 0) {
      call->completion->release();
      RaiseOSError(code, "submitting " + cls_ + "." + method_ + " on " + object);
    }
    pending_.push_back(std::move(call));
  }

  nb::bytes Next() {
    if (pending_.empty()) throw nb::stop_iteration();
    std::unique_ptr<Call> call = std::move(pending_.front());
    pending_.pop_front();
    int code;
    {
      nb::gil_scoped_release release;
      call->completion->wait_for_complete();
      code = call->completion->get_return_value();
    }
    call->completion->release();
    if (code >= 0 && call->method_code < 0) code = call->method_code;
    Check(code, cls_ + "." + method_ + " on " + call->object);
    return ToBytes(call->output);
  }

  size_t in_flight() const { return pending_.size(); }

  // Calls cannot be withdrawn once sent; wait for them before freeing buffers.
  void Drain() {
    nb::gil_scoped_release release;
    for (auto& call : pending_) {
      call->completion->wait_for_complete();
      call->completion->release();
    }
    pending_.clear();
  }

 private:
  struct Call {
    std::string object;
    librados::AioCompletion* completion = nullptr;
    ceph::bufferlist output;
    int method_code = 0;  // a routed call's method result (aio_exec's is the completion's)
  };
  librados::IoCtx* io_;
  skyhook_client::HostClients* hosts_;
  std::string cls_, method_;
  std::deque<std::unique_ptr<Call>> pending_;
};

class Pool {
 public:
  Pool(const std::string& conf, const std::string& pool, const std::string& name_space,
       const std::string& user, std::optional<std::string> keyring, int timeout_seconds)
      : hosts_({conf, pool, name_space, user, keyring, timeout_seconds}) {
    std::pair<int, std::string> connected;
    {
      nb::gil_scoped_release release;
      connected = skyhook_client::Connect({conf, pool, name_space, user, keyring, timeout_seconds},
                                          {}, cluster_, io_);
    }
    Check(connected.first, connected.second);
  }

  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool() { Close(); }

  // librados' threads must be stopped before the interpreter exits.
  void Close() {
    if (!open_) return;
    open_ = false;
    nb::gil_scoped_release release;
    hosts_.Close();
    io_.close();
    cluster_.shutdown();
  }

  void Put(const std::string& object, nb::bytes data,
           const std::map<std::string, nb::bytes>& attributes) {
    // Replacing means dropping the old attributes too: create (if absent),
    // remove and write again, all in one atomic operation.
    librados::ObjectWriteOperation operation;
    operation.create(false);
    operation.remove();
    operation.write_full(ToBufferList(data));
    for (const auto& [name, value] : attributes) {
      ceph::bufferlist encoded;
      encoded.append(value.c_str(), value.size());
      operation.setxattr(name.c_str(), encoded);
    }
    Check(Operate(object, operation), "writing " + object);
  }

  // Create or replace `object` as a copy of `source` (its data, xattrs and
  // omap), made by the OSDs: the object's primary reads the source from the
  // source's primary. Version 0: whichever version the source has, read
  // consistently (the OSD asserts it for every chunk after the first).
  void CopyFrom(const std::string& object, const std::string& source) {
    librados::ObjectWriteOperation operation;
    operation.copy_from(source, io_, 0, 0);
    Check(Operate(object, operation), "copying " + source + " to " + object);
  }

  nb::bytes Read(const std::string& object) {
    ceph::bufferlist data;
    int code;
    {
      nb::gil_scoped_release release;
      uint64_t size = 0;
      code = io_.stat(object, &size, nullptr);
      if (code >= 0) code = io_.read(object, data, size, 0);
    }
    Check(code, "reading " + object);
    return ToBytes(data);
  }

  // The object's size, version and attributes, read by one operation: what
  // ReadRanges then reads at that version.
  std::tuple<uint64_t, uint64_t, std::map<std::string, nb::bytes>> Open(const std::string& object) {
    librados::ObjectReadOperation operation;
    uint64_t size = 0;
    int stat_code = 0, attributes_code = 0;
    std::map<std::string, ceph::bufferlist> attributes;
    operation.stat2(&size, nullptr, &stat_code);
    operation.getxattrs(&attributes, &attributes_code);
    auto [code, version] = OperateRead(object, operation);
    Check(code < 0 ? code : (stat_code < 0 ? stat_code : attributes_code), "opening " + object);
    std::map<std::string, nb::bytes> values;
    for (auto& [name, value] : attributes) values.emplace(name, ToBytes(value));
    return {size, version, std::move(values)};
  }

  // Byte ranges of the object, in one operation that fails with ERANGE or
  // EOVERFLOW if the object is no longer at version (it was rewritten).
  std::vector<nb::bytes> ReadRanges(const std::string& object, uint64_t version,
                                    const std::vector<std::pair<uint64_t, uint64_t>>& ranges) {
    librados::ObjectReadOperation operation;
    operation.assert_version(version);
    std::vector<ceph::bufferlist> data(ranges.size());
    std::vector<int> codes(ranges.size(), 0);
    for (size_t i = 0; i < ranges.size(); ++i) {
      operation.read(ranges[i].first, ranges[i].second, &data[i], &codes[i]);
    }
    auto [code, ignored] = OperateRead(object, operation);
    for (int part : codes) code = code < 0 ? code : part;
    Check(code, "reading " + object);
    std::vector<nb::bytes> parts;
    for (auto& part : data) parts.push_back(ToBytes(part));
    return parts;
  }

  // The whole object and its version, read by one operation (what Replace and
  // RemoveAtVersion compare against).
  std::pair<nb::bytes, uint64_t> ReadVersioned(const std::string& object) {
    librados::ObjectReadOperation operation;
    ceph::bufferlist data;
    int read_code = 0;
    operation.read(0, 0, &data, &read_code);  // length 0: to the end of the object
    auto [code, version] = OperateRead(object, operation);
    Check(code < 0 ? code : read_code, "reading " + object);
    return {ToBytes(data), version};
  }

  // The whole object, its attributes and its version, read by one operation
  // (what ReplaceAtVersion compares against).
  std::tuple<nb::bytes, std::map<std::string, nb::bytes>, uint64_t> ReadWithAttributes(
      const std::string& object) {
    librados::ObjectReadOperation operation;
    ceph::bufferlist data;
    std::map<std::string, ceph::bufferlist> attributes;
    int read_code = 0, attributes_code = 0;
    operation.read(0, 0, &data, &read_code);
    operation.getxattrs(&attributes, &attributes_code);
    auto [code, version] = OperateRead(object, operation);
    Check(code < 0 ? code : (read_code < 0 ? read_code : attributes_code), "reading " + object);
    std::map<std::string, nb::bytes> values;
    for (auto& [name, value] : attributes) values.emplace(name, ToBytes(value));
    return {ToBytes(data), std::move(values), version};
  }

  std::optional<nb::bytes> GetXattr(const std::string& object, const std::string& name) {
    ceph::bufferlist value;
    int code;
    {
      nb::gil_scoped_release release;
      code = io_.getxattr(object, name.c_str(), value);
    }
    if (code == -ENODATA) return std::nullopt;
    Check(code, "reading attribute " + name + " of " + object);
    return ToBytes(value);
  }

  // Replace the bytes and set attributes (keeping the others) only if the
  // object is still at version: false if it changed or is gone.
  bool ReplaceAtVersion(const std::string& object, nb::bytes data,
                        const std::map<std::string, nb::bytes>& attributes, uint64_t version) {
    librados::ObjectWriteOperation operation;
    operation.assert_version(version);
    operation.write_full(ToBufferList(data));
    for (const auto& [name, value] : attributes) {
      operation.setxattr(name.c_str(), ToBufferList(value));
    }
    return CheckVersioned(Operate(object, operation), "replacing " + object);
  }

  // Exclusive create: false if the object exists.
  bool Create(const std::string& object, nb::bytes data) {
    librados::ObjectWriteOperation operation;
    operation.create(true);
    operation.write_full(ToBufferList(data));
    int code = Operate(object, operation);
    if (code == -EEXIST) return false;
    Check(code, "creating " + object);
    return true;
  }

  // Replace the content only if the object is still at version: false if it
  // changed or is gone.
  bool Replace(const std::string& object, nb::bytes data, uint64_t version) {
    librados::ObjectWriteOperation operation;
    operation.assert_version(version);
    operation.write_full(ToBufferList(data));
    return CheckVersioned(Operate(object, operation), "replacing " + object);
  }

  bool RemoveAtVersion(const std::string& object, uint64_t version) {
    librados::ObjectWriteOperation operation;
    operation.assert_version(version);
    operation.remove();
    return CheckVersioned(Operate(object, operation), "removing " + object);
  }

  // Every object of the I/O context's namespace. The iterator throws its errors.
  std::vector<std::string> List() {
    std::vector<std::string> names;
    int code = 0;
    std::string failure;
    {
      nb::gil_scoped_release release;
      try {
        for (auto it = io_.nobjects_begin(); it != io_.nobjects_end(); ++it)
          names.push_back(it->get_oid());
      } catch (const std::system_error& error) {
        code = -std::abs(error.code().value());
        failure = error.what();
      } catch (const std::exception& error) {
        code = -EIO;
        failure = error.what();
      }
    }
    if (code < 0) RaiseOSError(code, "listing objects (" + failure + ")");
    return names;
  }

  // Removing an absent object is not an error.
  void Remove(const std::string& object) {
    int code;
    {
      nb::gil_scoped_release release;
      code = io_.remove(object);
    }
    if (code != -ENOENT) Check(code, "removing " + object);
  }

  nb::bytes Exec(const std::string& object, const std::string& cls, const std::string& method,
                 nb::bytes request) {
    ceph::bufferlist input = ToBufferList(request), output;
    int code;
    {
      nb::gil_scoped_release release;
      code = io_.exec(object, cls.c_str(), method.c_str(), input, output);
    }
    Check(code, cls + "." + method + " on " + object);
    return ToBytes(output);
  }

  // A method that writes its object runs in a write operation, whose output
  // the OSD returns only when asked to (RETURNVEC) and up to its
  // osd_max_write_op_reply_len.
  nb::bytes ExecWrite(const std::string& object, const std::string& cls, const std::string& method,
                      nb::bytes request) {
    ceph::bufferlist input = ToBufferList(request), output;
    int method_code = 0;
    librados::ObjectWriteOperation operation;
    operation.exec(cls.c_str(), method.c_str(), input, &output, &method_code);
    int code;
    {
      nb::gil_scoped_release release;
      code = io_.operate(object, &operation, librados::OPERATION_RETURNVEC);
    }
    Check(code < 0 ? code : method_code, cls + "." + method + " on " + object);
    return ToBytes(output);
  }

  // Values are bytes: statistics and index blocks are binary.
  void OmapSet(const std::string& object, const std::map<std::string, nb::bytes>& values) {
    std::map<std::string, ceph::bufferlist> encoded;
    for (const auto& [key, value] : values) encoded[key].append(value.c_str(), value.size());
    librados::ObjectWriteOperation operation;
    operation.omap_set(encoded);
    Check(Operate(object, operation), "setting omap of " + object);
  }

  void OmapRemove(const std::string& object, const std::vector<std::string>& keys) {
    librados::ObjectWriteOperation operation;
    operation.omap_rm_keys(std::set<std::string>(keys.begin(), keys.end()));
    int code = Operate(object, operation);
    if (code != -ENOENT) Check(code, "removing omap keys of " + object);
  }

  std::map<std::string, std::string> OmapItems(const std::string& object) {
    std::map<std::string, std::string> items;
    std::string after;
    while (true) {
      std::map<std::string, ceph::bufferlist> page;
      int code;
      {
        nb::gil_scoped_release release;
        code = io_.omap_get_vals2(object, after, 1000, &page, nullptr);
      }
      if (code == -ENOENT) return items;
      Check(code, "reading omap of " + object);
      if (page.empty()) return items;
      for (auto& [key, value] : page) items[key] = value.to_str();
      after = page.rbegin()->first;
    }
  }

  std::vector<std::string> OmapKeys(const std::string& object) {
    std::vector<std::string> keys;
    std::string after;
    while (true) {
      std::set<std::string> page;
      int code;
      {
        nb::gil_scoped_release release;
        code = io_.omap_get_keys2(object, after, 1000, &page, nullptr);
      }
      if (code == -ENOENT) return keys;
      Check(code, "listing omap of " + object);
      if (page.empty()) return keys;
      keys.insert(keys.end(), page.begin(), page.end());
      after = *page.rbegin();
    }
  }

  std::unique_ptr<CallStream> Stream(const std::string& cls, const std::string& method) {
    return std::make_unique<CallStream>(&io_, &hosts_, cls, method);
  }

  // Where CRUSH places each object: its placement seed (the hash its
  // placement group is taken from), to be reduced by the pool's pg_num.
  std::vector<uint32_t> PlacementSeeds(const std::vector<std::string>& objects) {
    std::vector<uint32_t> seeds;
    seeds.reserve(objects.size());
    for (const std::string& object : objects) {
      uint32_t seed = 0;
      Check(io_.get_object_pg_hash_position2(object, &seed), "placing " + object);
      seeds.push_back(seed);
    }
    return seeds;
  }

  // A monitor's answer to a JSON command.
  nb::bytes Command(const std::string& command) {
    ceph::bufferlist input, output;
    std::string status;
    int code;
    {
      nb::gil_scoped_release release;
      code = cluster_.mon_command(command, input, &output, &status);
    }
    Check(code, "command " + command + " (" + status + ")");
    return ToBytes(output);
  }

 private:
  int Operate(const std::string& object, librados::ObjectWriteOperation& operation) {
    nb::gil_scoped_release release;
    return io_.operate(object, &operation);
  }

  // (result, the object's version) of a read operation.
  std::pair<int, uint64_t> OperateRead(const std::string& object,
                                       librados::ObjectReadOperation& operation) {
    librados::AioCompletion* completion = librados::Rados::aio_create_completion();
    int code;
    uint64_t version = 0;
    {
      nb::gil_scoped_release release;
      code = io_.aio_operate(object, completion, &operation, nullptr);
      if (code >= 0) {
        completion->wait_for_complete();
        code = completion->get_return_value();
        version = completion->get_version64();
      }
    }
    completion->release();
    return {code, version};
  }

  // assert_version fails with ERANGE (object newer) or EOVERFLOW (older), an
  // absent object with ENOENT: all mean "not the version read".
  static bool CheckVersioned(int code, const std::string& what) {
    if (code == -ERANGE || code == -EOVERFLOW || code == -ENOENT) return false;
    Check(code, what);
    return true;
  }

  librados::Rados cluster_;
  librados::IoCtx io_;
  skyhook_client::HostClients hosts_;
  bool open_ = true;
};

}  // namespace

NB_MODULE(_rados, m) {
  m.doc() = "librados access for the skyhook client";
  nb::class_<CallStream>(m, "CallStream")
      .def("submit", &CallStream::Submit, nb::arg("object"), nb::arg("request"),
           nb::arg("host") = nb::none())
      .def("next", &CallStream::Next, "The reply of the oldest call still pending.")
      .def_prop_ro("in_flight", &CallStream::in_flight)
      .def("drain", &CallStream::Drain, "Wait for every pending call and drop the replies.");
  nb::class_<Pool>(m, "Pool")
      .def(nb::init<const std::string&, const std::string&, const std::string&, const std::string&,
                    std::optional<std::string>, int>(),
           nb::arg("conf"), nb::arg("pool"), nb::arg("namespace") = "", nb::arg("user") = "admin",
           nb::arg("keyring") = nb::none(), nb::arg("timeout_seconds") = 30)
      .def("put", &Pool::Put, nb::arg("object"), nb::arg("data"), nb::arg("attributes"))
      .def("close", &Pool::Close)
      .def("copy_from", &Pool::CopyFrom, nb::arg("object"), nb::arg("source"),
           "Create or replace object as a copy of source, made by the OSDs.")
      .def("read", &Pool::Read)
      .def("remove", &Pool::Remove)
      .def("read_versioned", &Pool::ReadVersioned, "(data, version) of a whole object.")
      .def("open", &Pool::Open, "(size, version, attributes) of an object, read at once.")
      .def("read_ranges", &Pool::ReadRanges, nb::arg("object"), nb::arg("version"),
           nb::arg("ranges"), "Byte ranges [(offset, length)] of an object still at version.")
      .def("create", &Pool::Create, nb::arg("object"), nb::arg("data"),
           "Create an object exclusively; False if it exists.")
      .def("replace", &Pool::Replace, nb::arg("object"), nb::arg("data"), nb::arg("version"),
           "Replace an object's data if it is at version; False if not.")
      .def("remove_at_version", &Pool::RemoveAtVersion, nb::arg("object"), nb::arg("version"),
           "Remove an object if it is at version; False if not.")
      .def("read_with_attributes", &Pool::ReadWithAttributes,
           "(data, attributes, version) of a whole object.")
      .def("get_xattr", &Pool::GetXattr, nb::arg("object"), nb::arg("name"))
      .def("replace_at_version", &Pool::ReplaceAtVersion, nb::arg("object"), nb::arg("data"),
           nb::arg("attributes"), nb::arg("version"),
           "Replace an object's data and set attributes if it is at version; False if not.")
      .def("list", &Pool::List, "Names of every object in the namespace.")
      .def("omap_items", &Pool::OmapItems)
      .def("exec", &Pool::Exec, nb::arg("object"), nb::arg("cls"), nb::arg("method"),
           nb::arg("request"))
      .def("exec_write", &Pool::ExecWrite, nb::arg("object"), nb::arg("cls"), nb::arg("method"),
           nb::arg("request"))
      .def("omap_set", &Pool::OmapSet)
      .def("omap_remove", &Pool::OmapRemove)
      .def("omap_keys", &Pool::OmapKeys)
      // The stream uses the pool's I/O context: keep the pool alive as long.
      .def("placement_seeds", &Pool::PlacementSeeds, nb::arg("objects"))
      .def("command", &Pool::Command, nb::arg("command"))
      .def("stream", &Pool::Stream, nb::arg("cls"), nb::arg("method"), nb::keep_alive<0, 1>());
}
