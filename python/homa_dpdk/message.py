"""Message: a request or response received into the daemon's receive pool."""

import socket

__all__ = ["Message"]


class Message:
    """A received request or response.

    id: the RPC id (odd for a request: the server id; even for a
    response: the client id that send returned). peer: (ip str, port) of
    the other end. port: the local port it concerns (the bound port for a
    request). is_request. length (also len(msg)). data: a read-only
    memoryview of the message's bytes where the daemon put them, in the
    receive pool -- no copy.

    release() (or leaving a with block) gives up data; the pool pages go
    back to the daemon (OpReturnPages) as soon as no buffer made from data
    is left: at once, or when the last numpy array from
    np.frombuffer(msg.data) or slice of data is gone. So such arrays stay
    valid however long they live, and a Message simply dropped returns its
    pages too, once garbage-collected.
    """

    __slots__ = ("id", "peer", "port", "is_request", "length", "_data", "_client", "_peer_ip", "_peer_ip6",
                 "_released", "_replied")

    def __init__(self, client, comp, is_request, data):
        self.id = comp.rpc_id
        if comp.peer_ip6 != bytes(16):
            self.peer = (socket.inet_ntop(socket.AF_INET6, comp.peer_ip6), comp.peer_port)
        else:
            self.peer = (socket.inet_ntop(socket.AF_INET, comp.peer_ip), comp.peer_port)
        self.port = comp.port
        self.is_request = is_request
        self.length = comp.length
        self._data = data
        self._client = client
        self._peer_ip = comp.peer_ip
        self._peer_ip6 = comp.peer_ip6
        self._released = False
        self._replied = False

    @property
    def data(self):
        if self._released:
            raise ValueError("homa_dpdk: the message was released; its data is gone")
        return self._data

    def tobytes(self):
        """A copy of the data as bytes."""
        return self.data.tobytes()

    def __len__(self):
        return self.length

    @property
    def released(self):
        return self._released

    def release(self):
        """Give up data. The pages go back to the daemon once no buffer
        made from data remains (see the class docstring). Idempotent."""
        if self._drop_view():
            self._client._give_back()

    def _drop_view(self):
        if self._released:
            return False
        self._released = True
        data, self._data = self._data, None
        try:
            data.release()
        except BufferError:
            pass  # something holds a direct export of data: the pages go back when it lets go
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __repr__(self):
        kind = "request" if self.is_request else "response"
        state = " released" if self._released else ""
        return f"<homa_dpdk.Message {kind} id={self.id} peer={self.peer} port={self.port} len={self.length}{state}>"
