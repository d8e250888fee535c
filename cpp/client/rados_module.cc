// The client's path into RADOS, through librados' C++ API: whole-object writes
// with their attributes in one atomic operation, plain reads, omap, and many
// object-class calls in flight at once with replies taken in order. Every
// blocking call releases the GIL. Failures raise OSError(errno, message).
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>

#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>
#include <rados/librados.hpp>

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
  CallStream(librados::IoCtx* io, std::string cls, std::string method)
      : io_(io), cls_(std::move(cls)), method_(std::move(method)) {}
  CallStream(const CallStream&) = delete;
  CallStream& operator=(const CallStream&) = delete;
  ~CallStream() { Drain(); }

  void Submit(const std::string& object, nb::bytes request) {
    auto call = std::make_unique<Call>();
    call->object = object;
    call->completion = librados::Rados::aio_create_completion();
    ceph::bufferlist input = ToBufferList(request);
    int code = io_->aio_exec(object, call->completion, cls_.c_str(), method_.c_str(), input,
                             &call->output);
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
  };
  librados::IoCtx* io_;
  std::string cls_, method_;
  std::deque<std::unique_ptr<Call>> pending_;
};

class Pool {
 public:
  Pool(const std::string& conf, const std::string& pool, const std::string& name_space,
       const std::string& user, std::optional<std::string> keyring, int timeout_seconds) {
    Check(cluster_.init2(("client." + user).c_str(), "ceph", 0), "initialising librados");
    Check(cluster_.conf_read_file(conf.c_str()), "reading " + conf);
    if (keyring) Check(cluster_.conf_set("keyring", keyring->c_str()), "setting keyring");
    std::string timeout = std::to_string(timeout_seconds);
    Check(cluster_.conf_set("client_mount_timeout", timeout.c_str()), "setting timeout");
    Check(cluster_.conf_set("rados_mon_op_timeout", timeout.c_str()), "setting timeout");
    int code;
    {
      nb::gil_scoped_release release;
      code = cluster_.connect();
    }
    Check(code, "connecting to the cluster of " + conf);
    Check(cluster_.ioctx_create(pool.c_str(), io_), "opening pool " + pool);
    io_.set_namespace(name_space);
  }

  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool() { Close(); }

  // librados' threads must be stopped before the interpreter exits.
  void Close() {
    if (!open_) return;
    open_ = false;
    nb::gil_scoped_release release;
    io_.close();
    cluster_.shutdown();
  }

  void Put(const std::string& object, nb::bytes data,
           const std::map<std::string, std::string>& attributes) {
    // Replacing means dropping the old attributes too: create (if absent),
    // remove and write again, all in one atomic operation.
    librados::ObjectWriteOperation operation;
    operation.create(false);
    operation.remove();
    operation.write_full(ToBufferList(data));
    for (const auto& [name, value] : attributes) {
      ceph::bufferlist encoded;
      encoded.append(value);
      operation.setxattr(name.c_str(), encoded);
    }
    int code;
    {
      nb::gil_scoped_release release;
      code = io_.operate(object, &operation);
    }
    Check(code, "writing " + object);
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

  void OmapSet(const std::string& object, const std::map<std::string, std::string>& values) {
    std::map<std::string, ceph::bufferlist> encoded;
    for (const auto& [key, value] : values) encoded[key].append(value);
    librados::ObjectWriteOperation operation;
    operation.omap_set(encoded);
    int code;
    {
      nb::gil_scoped_release release;
      code = io_.operate(object, &operation);
    }
    Check(code, "setting omap of " + object);
  }

  void OmapRemove(const std::string& object, const std::vector<std::string>& keys) {
    librados::ObjectWriteOperation operation;
    operation.omap_rm_keys(std::set<std::string>(keys.begin(), keys.end()));
    int code;
    {
      nb::gil_scoped_release release;
      code = io_.operate(object, &operation);
    }
    if (code != -ENOENT) Check(code, "removing omap keys of " + object);
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
    return std::make_unique<CallStream>(&io_, cls, method);
  }

 private:
  librados::Rados cluster_;
  librados::IoCtx io_;
  bool open_ = true;
};

}  // namespace

NB_MODULE(_rados, m) {
  m.doc() = "librados access for the skyhook client";
  nb::class_<CallStream>(m, "CallStream")
      .def("submit", &CallStream::Submit, nb::arg("object"), nb::arg("request"))
      .def("next", &CallStream::Next, "The reply of the oldest call still pending.")
      .def_prop_ro("in_flight", &CallStream::in_flight)
      .def("drain", &CallStream::Drain, "Wait for every pending call and drop the replies.");
  nb::class_<Pool>(m, "Pool")
      .def(nb::init<const std::string&, const std::string&, const std::string&,
                    const std::string&, std::optional<std::string>, int>(),
           nb::arg("conf"), nb::arg("pool"), nb::arg("namespace") = "", nb::arg("user") = "admin",
           nb::arg("keyring") = nb::none(), nb::arg("timeout_seconds") = 30)
      .def("put", &Pool::Put, nb::arg("object"), nb::arg("data"), nb::arg("attributes"))
      .def("close", &Pool::Close)
      .def("read", &Pool::Read)
      .def("remove", &Pool::Remove)
      .def("exec", &Pool::Exec, nb::arg("object"), nb::arg("cls"), nb::arg("method"),
           nb::arg("request"))
      .def("omap_set", &Pool::OmapSet)
      .def("omap_remove", &Pool::OmapRemove)
      .def("omap_keys", &Pool::OmapKeys)
      // The stream uses the pool's I/O context: keep the pool alive as long.
      .def("stream", &Pool::Stream, nb::arg("cls"), nb::arg("method"), nb::keep_alive<0, 1>());
}
