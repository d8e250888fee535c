"""The client side of remote access: a store served by ``skyhook serve``,
opened as ``skyhook.connect("grpc://host:port")`` and used as a local one,
and the Flight SQL messages both sides speak."""
