"""The object plane: values by reference between the job's Python processes.

A value that pickles small (INLINE_MAX) travels inside the call or the ref
that names it. A bigger one is an object: its pickle (protocol 5, the
buffers of numpy arrays and the like out of band, so not copied into one
string) is kept by the process that owns it -- the one that put it, or the
caller a task's big result is pushed back to -- and fetched from there by a
process that needs it. Each owner runs an object server on the address it
reaches the supervisor from: mutual TLS with the job's credentials (ca.pem,
cert.pem, key.pem; plain TCP only when the job runs --insecure), so only the
job's processes fetch or push. Its handshakes run on one event loop (a
stranger never gets a thread); a member's connection gets a thread of its
own, within bounds per source and in all (see _Server).

Requests on a connection (one at a time, the connection reused):
    b"G" oid             -> b"K" frames | b"N" u32 n, message
    b"P" oid frames      -> b"K"        (push: a big result to its caller)
    b"H" oid             -> b"K" | b"N" (a borrower sends its ref on: one more pin)
    b"R" oid             -> b"K"        (a borrower dropped its ref)
    b"B" oid u64 k       -> b"K" u64 n  (a streaming generator's call, oid its slot:
                                 its caller's next has taken n items, answered
                                 once n >= k or after BACKPRESSURE_POLL_S;
                                 2**64-1 once the caller dropped it)
    b"C" key u64 m, request -> b"K" u64 m, reply | b"N" u32 n, message
                                 (a method call straight to an actor this process
                                 hosts, key: actor_key(name); see serve_actor)
frames: u32 count, then each as u64 length + bytes. An object is at most
MAX_OBJECT bytes; the practical bound is the owner's memory.

Lifetime (reference counting): an object lives while the owner holds a ref
to it or a borrower does. Every ref to it in the owner counts one; every
time a ref leaves the owner pickled (an argument, a result) it is pinned
once more, and the borrower that unpickled it releases that pin when its
ref is collected (b"R", sent from a background thread). A process that ends
takes its objects with it: a later fetch says so (OwnerDiedError)."""
import atexit
import io
import mmap
import os
import pickle
import queue
import socket
import struct
import threading
import weakref

from . import _cloud

# ssl and cloudpickle are imported on first use: `import atl` stays quick
# for a driver that never sends an object (a connect is ~30 ms in all).
ssl = None


def _pickler():
    """cloudpickle's pickler (see atl._cloud), else pickle's."""
    module = _cloud.cloudpickle()
    return module.CloudPickler if module else pickle.Pickler


def _ssl():
    global ssl
    if ssl is None:
        import ssl as module
        ssl = module
    return ssl

INLINE_MAX = 100 * 1024
MAX_OBJECT = 64 * 1024 ** 3
_MAX_FRAMES = 1 << 20


class ObjectLostError(Exception):
    """An object's owner no longer has it (the owner process ended, or the
    object was freed): as Ray's ObjectLostError / OwnerDiedError."""


# --- pickling with out-of-band buffers -------------------------------------------


def dumps(value):
    """`value` as frames: [pickle, buffer, buffer...] (protocol 5: big
    buffers out of band, not copied). cloudpickle where the image has it."""
    buffers = []
    out = io.BytesIO()
    pickler = _pickler()(out, protocol=5, buffer_callback=buffers.append)
    pickler.dump(value)
    return [out.getbuffer()] + [b.raw() for b in buffers]


def inline(frames):
    """A small value's frames as a list of bytes (to pickle into a message)."""
    return [bytes(f) for f in frames]


def loads(frames):
    return pickle.loads(frames[0], buffers=frames[1:])


def size(frames):
    return sum(memoryview(f).nbytes for f in frames)


# --- the store ------------------------------------------------------------------------


class Store:
    """This process's objects: oid -> frames, each with its count of holders."""

    def __init__(self):
        # Re-entrant: a ref collected by the cycle collector while this
        # thread holds the lock releases its object here (a finalizer).
        self._lock = threading.RLock()
        self._arrived = threading.Condition(self._lock)  # a put, or wake(): waiters look again
        self._objects = {}  # oid -> [frames, count, shared]

    def put(self, oid, frames, count=1):
        with self._lock:
            self._objects[oid] = [frames, count, None]
            self._arrived.notify_all()

    def wait_for(self, oid, done, timeout):
        """Whether object `oid` is here, waiting up to `timeout` s for it or
        for `done()` (checked under the store's lock: keep it cheap)."""
        with self._lock:
            self._arrived.wait_for(lambda: oid in self._objects or done(), timeout)
            return oid in self._objects

    def wake(self):
        """Waiters look again (what they wait for besides a put happened)."""
        with self._lock:
            self._arrived.notify_all()

    def get(self, oid):
        with self._lock:
            entry = self._objects.get(oid)
            return entry[0] if entry else None

    def take(self, oid):
        """A pushed result, handed over once."""
        with self._lock:
            entry = self._objects.pop(oid, None)
        if entry is None:
            return None
        _close_shared(entry[2])
        return entry[0]

    def hold(self, oid):
        with self._lock:
            entry = self._objects.get(oid)
            if entry:
                entry[1] += 1
            return entry is not None

    def release(self, oid):
        with self._lock:
            entry = self._objects.get(oid)
            if entry:
                entry[1] -= 1
                if entry[1] <= 0:
                    del self._objects[oid]
                    _close_shared(entry[2])

    def shared(self, oid):
        """Object `oid` for a process on this host: [(bytes, None) | (None,
        (memfd, length))] a frame each, big frames in memfds (made once, at
        the first such fetch, unless the frame lives in one already: a put's
        copy); None when there is no such object."""
        with self._lock:
            entry = self._objects.get(oid)
            if entry is None:
                return None
            if entry[2] is not None:
                return entry[2]
            frames = entry[0]
        made = [_share(f) for f in frames]  # the copies outside the lock
        with self._lock:
            entry = self._objects.get(oid)
            if entry is None or entry[2] is not None:
                _close_shared(made)
                return entry[2] if entry is not None else None
            entry[2] = made
            return made

    def stats(self):
        """(objects, bytes) held now."""
        with self._lock:
            return len(self._objects), sum(size(e[0]) for e in self._objects.values())


_store = Store()


def store():
    return _store


class Streams:
    """The streaming calls with a backpressure bound whose items this
    process consumes: slot oid -> how many its ObjectRefGenerator handed
    out. Their generators ask (b"B") and wait while too many wait unread;
    a slot not here (its generator dropped, or never one) holds nothing
    back."""

    GONE = (1 << 64) - 1

    def __init__(self):
        self._cond = threading.Condition()
        self._taken = {}

    def open(self, slot):
        with self._cond:
            self._taken[slot] = 0

    def consumed(self, slot, n):
        with self._cond:
            if slot in self._taken:
                self._taken[slot] = n
                self._cond.notify_all()

    def close(self, slot):
        with self._cond:
            if self._taken.pop(slot, None) is not None:
                self._cond.notify_all()

    def wait(self, slot, at_least, timeout):
        """How many of `slot`'s items were taken, once at least `at_least`
        or after `timeout` s; GONE for a slot not (or no longer) here."""
        with self._cond:
            self._cond.wait_for(lambda: self._taken.get(slot, self.GONE) >= at_least, timeout)
            return self._taken.get(slot, self.GONE)


_streams = Streams()


def streams():
    return _streams


def new_oid():
    return os.urandom(16)


# --- wire -------------------------------------------------------------------------


_BIG = 1 << 20


def buffer(n, populate=True):
    """n writable bytes. Big ones are mapped: with MAP_POPULATE (`populate`)
    the kernel faults their pages in one go instead of one trap each as they
    are written (2-3x faster on the 2-core machine; a 1 GiB receive was
    mostly page faults). Without, for a size only a peer's header declared
    (the server's side: a member's 29-byte put header said 64 GiB), the pages
    are committed as the bytes arrive, never on the header's word."""
    if n >= _BIG:
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
        if populate and hasattr(mmap, "MAP_POPULATE"):
            flags |= mmap.MAP_POPULATE
        elif hasattr(mmap, "MAP_NORESERVE"):
            flags |= mmap.MAP_NORESERVE
        try:
            return mmap.mmap(-1, n, flags=flags)
        except OSError:
            if not populate:
                raise ConnectionError(f"no room for an object of {n} bytes") from None
    return bytearray(n)


def copy(frame):
    """A copy of `frame` (a store's own: the caller's later changes do not
    reach it). A big one in shared memory (a memfd), so a process on this
    host maps it instead of receiving a copy (see _share)."""
    view = memoryview(frame).cast("B")
    if view.nbytes < _BIG:
        return bytes(view)
    shared = _memfd_copy(view)
    if shared is not None:
        fd, mm = shared
        with _memfds_lock:
            _memfds[id(mm)] = (weakref.ref(mm), fd)
        weakref.finalize(mm, _forget_memfd, id(mm), fd)
        return mm
    out = buffer(view.nbytes)
    memoryview(out)[:] = view
    return out


# --- same host: big frames through shared memory -----------------------------------
#
# A process on the owner's host (atl's local pods, a driver beside its head)
# asks over a Unix socket in the abstract namespace named after the owner's
# address ("\0atl-objects/HOST:PORT": only reachable from the same network
# namespace, so a Kubernetes pod's peers in other pods never find it) and
# gets each big frame as a memfd (SCM_RIGHTS), which it maps copy-on-write:
# no bytes cross a socket, nothing is encrypted, the pages are shared until
# written. Both ends check the other is this user's (SO_PEERCRED); where the
# socket is not there (another pod, not Linux) the fetch goes over TLS as
# before.

_memfds = {}  # id(mmap) -> (weakref to it, its memfd): copy()'s shared buffers
_memfds_lock = threading.Lock()


_fd_budget = None


def _memfds_allowed():
    """Whether another object may live in a memfd: each holds two open files
    (its memfd and its mapping's), so their number stays within a quarter of
    this process's limit (raised to its hard limit once, as Ray's workers
    do); past it objects live in anonymous memory and travel over TLS."""
    global _fd_budget
    if _fd_budget is None:
        try:
            import resource
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            if hard == resource.RLIM_INFINITY or hard > soft:
                try:
                    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
                    soft = hard
                except (ValueError, OSError):
                    pass
            _fd_budget = max(0, min(soft, 1 << 20) // 4)
        except (ImportError, ValueError, OSError):
            _fd_budget = 0
    with _memfds_lock:
        return 2 * len(_memfds) < _fd_budget


def _memfd_copy(view):
    """(memfd, its shared mapping) holding a copy of `view`; None where there
    are no memfds (or no room for more). Written with pwrite, not through
    the mapping: the kernel makes the pages as it copies (~2x faster than
    faulting them in)."""
    if not hasattr(os, "memfd_create") or not _memfds_allowed():
        return None
    try:
        fd = os.memfd_create("atl-object", os.MFD_CLOEXEC)
    except OSError:
        return None
    try:
        os.ftruncate(fd, view.nbytes)
        done = 0
        while done < view.nbytes:
            done += os.pwrite(fd, view[done:done + (1 << 30)], done)
        return fd, mmap.mmap(fd, view.nbytes, flags=mmap.MAP_SHARED)
    except (OSError, ValueError):
        os.close(fd)
        return None


def _forget_memfd(key, fd):
    with _memfds_lock:
        _memfds.pop(key, None)
    os.close(fd)


def _share(frame):
    """(bytes, None) for a small frame; (None, (fd, length)) for a big one:
    its own memfd when copy() made it, else a new memfd holding a copy."""
    view = memoryview(frame).cast("B")
    if view.nbytes < _BIG:
        return bytes(view), None
    with _memfds_lock:
        known = _memfds.get(id(frame))
        if known is not None and known[0]() is frame:
            return None, (os.dup(known[1]), view.nbytes)
    shared = _memfd_copy(view)
    if shared is None:
        raise OSError("no memfd for an object's frame")
    fd, mm = shared
    mm.close()
    return None, (fd, view.nbytes)


def _close_shared(shared):
    for _, fd_len in shared or ():
        if fd_len is not None:
            try:
                os.close(fd_len[0])
            except OSError:
                pass


def _host_socket_name(owner):
    return b"\0atl-objects/" + owner.encode()


def _peer_is_me(sock):
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", creds)
    return uid == os.getuid()


class _HostServer:
    """The owner's side: one thread accepting on the abstract socket, a
    thread per connection (this user's processes only), each request
    b"G" oid -> b"K" u32 count, per frame u8 kind (0 bytes, 1 memfd) + u64
    length, the bytes frames, the memfds as ancillary data | b"N"."""

    def __init__(self, owner):
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(_host_socket_name(owner))
        self._sock.listen(128)
        self._closed = False
        threading.Thread(target=self._loop, daemon=True, name="atl-objects-host").start()

    def close(self):
        self._closed = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()

    def _loop(self):
        # Survives what the TLS server's loop survives: no descriptor left
        # (EMFILE: a pause, not a spin) and no thread to be had (a pod's
        # pids.max: that connection is closed, its reader goes over TLS).
        import time
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                if self._closed:
                    return
                time.sleep(0.05)
                continue
            try:
                mine = _peer_is_me(conn)
            except OSError:
                mine = False
            if not mine:
                conn.close()
                continue
            try:
                threading.Thread(target=self._serve, args=(conn,), daemon=True,
                                 name="atl-objects-host-conn").start()
            except RuntimeError:
                conn.close()

    def _serve(self, conn):
        try:
            conn.settimeout(_IDLE_S)
            while True:
                head, fds, _, _ = socket.recv_fds(conn, 17, _MAX_FDS)
                if head and len(head) < 17:
                    rest = _recv_upto(conn, 17 - len(head))
                    head = head + rest if rest is not None else b""
                if head[:1] == b"P":  # a result pushed here, its big frames as memfds
                    try:
                        frames = _host_frames(conn, fds, keep=True)
                    finally:
                        for fd in fds:
                            os.close(fd)
                    _store.put(bytes(head[1:17]), frames)
                    conn.sendall(b"K")
                    continue
                for fd in fds:
                    os.close(fd)
                if head[:1] != b"G":
                    return
                shared = _store.shared(bytes(head[1:17]))
                if shared is None:
                    why = b"no such object here (freed, or never put)"
                    conn.sendall(b"N" + struct.pack("!I", len(why)) + why)
                    continue
                _send_host_frames(conn, b"K", shared)
        except (OSError, ConnectionError, struct.error, ValueError):
            pass
        finally:
            conn.close()


_MAX_FDS = 4096  # big frames of one object sent as memfds at once


def _send_host_frames(sock, first, shared):
    """`first` (with the memfds as ancillary data), u32 count, per frame u8
    kind (0 bytes, 1 memfd) + u64 length, then the bytes frames."""
    fds = [fd_len[0] for _, fd_len in shared if fd_len is not None]
    if len(fds) > _MAX_FDS:
        raise ValueError("too many big frames for one message")
    parts = [struct.pack("!I", len(shared))]
    for data, fd_len in shared:
        parts.append(struct.pack("!BQ", 0, len(data)) if fd_len is None else
                     struct.pack("!BQ", 1, fd_len[1]))
    parts += [data for data, fd_len in shared if fd_len is None]
    if socket.send_fds(sock, [first], fds) != len(first):
        raise ConnectionError("a short send")
    sock.sendall(b"".join(parts))


def _host_frames(sock, fds, keep):
    """The frames _send_host_frames sent, big ones mapped from their memfds:
    copy-on-write for a reader (its writes stay its own), shared and kept
    (the memfd registered, as copy()'s) for a pushed result this process
    now owns. The caller closes `fds`."""
    (count,) = struct.unpack("!I", _recv_exact(sock, 4))
    if count > _MAX_FRAMES:
        raise ConnectionError("not an atl object")
    kinds = [struct.unpack("!BQ", _recv_exact(sock, 9)) for _ in range(count)]
    if sum(1 for kind, _ in kinds if kind == 1) != len(fds) or any(k > 1 for k, _ in kinds):
        raise ConnectionError("memfds missing")
    frames, shared = [], iter(fds)
    for kind, n in kinds:
        if kind == 0:
            frames.append(_recv_exact(sock, n))
        elif keep:
            fd = os.dup(next(shared))
            mm = mmap.mmap(fd, n, flags=mmap.MAP_SHARED)
            with _memfds_lock:
                _memfds[id(mm)] = (weakref.ref(mm), fd)
            weakref.finalize(mm, _forget_memfd, id(mm), fd)
            frames.append(mm)
        else:
            frames.append(mmap.mmap(next(shared), n, flags=mmap.MAP_PRIVATE,
                                    prot=mmap.PROT_READ | mmap.PROT_WRITE))
    return frames


def _recv_upto(sock, n):
    """n bytes, or None when the peer closed first."""
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


class _HostClient:
    """The reader's side: a connection per owner on this host, kept; owners
    whose socket is not there (another pod) remembered, and asked over TLS."""

    def __init__(self):
        self._lock = threading.Lock()
        self._socks = {}  # owner -> [sockets not in use]
        self._elsewhere = set()  # owners not on this host (or not reachable so)

    def clear(self):
        with self._lock:
            socks, self._socks = self._socks, {}
            self._elsewhere = set()
        for pool in socks.values():
            for sock in pool:
                sock.close()

    def _connect(self, owner):
        """A connection to `owner`'s host socket (kept or new); None when it
        is not on this host (remembered)."""
        with self._lock:
            if owner in self._elsewhere:
                return None
            pool = self._socks.get(owner)
            sock = pool.pop() if pool else None
        if sock is not None:
            return sock
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(_host_socket_name(owner))
            if not _peer_is_me(sock):
                raise OSError("not this user's")
        except OSError:
            sock.close()
            with self._lock:
                self._elsewhere.add(owner)
            return None
        return sock

    def _keep(self, owner, sock):
        with self._lock:
            self._socks.setdefault(owner, []).append(sock)

    def fetch(self, owner, oid):
        """The frames of `oid` mapped from `owner`'s memory; None when
        `owner` cannot be asked this way."""
        sock = self._connect(owner)
        if sock is None:
            return None
        try:
            sock.settimeout(_TRANSFER_S)
            sock.sendall(b"G" + oid)
            first, fds, _, _ = socket.recv_fds(sock, 1, _MAX_FDS)
            try:
                if first == b"N":
                    (n,) = struct.unpack("!I", _recv_exact(sock, 4))
                    result = ObjectLostError(f"object {oid.hex()} at {owner}: "
                                             f"{bytes(_recv_exact(sock, n)).decode('utf-8', 'replace')}")
                elif first == b"K":
                    result = _host_frames(sock, fds, keep=False)
                else:
                    raise ConnectionError("not atl's answer")
            finally:
                for fd in fds:
                    os.close(fd)
        except (OSError, ConnectionError, struct.error, ValueError):
            sock.close()
            return None  # asked again over TLS, which says what is wrong
        self._keep(owner, sock)
        if isinstance(result, Exception):
            raise result
        return result

    def push(self, owner, oid, frames):
        """Hands `frames` to `owner` on this host as object `oid`, its big
        frames as memfds; False when `owner` cannot be reached so."""
        sock = self._connect(owner)
        if sock is None:
            return False
        shared = None
        try:
            shared = [_share(f) for f in frames]
            sock.settimeout(_TRANSFER_S)
            _send_host_frames(sock, b"P" + oid, shared)
            if _recv_exact(sock, 1) != b"K":
                raise ConnectionError("not atl's answer")
        except (OSError, ConnectionError, struct.error, ValueError):
            sock.close()
            return False  # sent again over TLS, which says what is wrong
        finally:
            _close_shared(shared)
        self._keep(owner, sock)
        return True

_host_client = _HostClient()


def _recv_exact(sock, n, populate=True):
    buf = buffer(n, populate)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], min(n - got, 1 << 24))
        if not k:
            raise ConnectionError("the connection closed mid-message")
        got += k
    return buf


def _send_frames(sock, frames):
    sock.sendall(struct.pack("!I", len(frames)) +
                 b"".join(struct.pack("!Q", memoryview(f).nbytes) for f in frames))
    for f in frames:
        view = memoryview(f).cast("B")
        for i in range(0, len(view), 1 << 24):  # ssl writes at most 2 GiB at once
            sock.sendall(view[i:i + (1 << 24)])


_memory = None


def memory_limit():
    """The most memory this process may have: the machine's, or its
    cgroup's (a pod's limit) when lower."""
    global _memory
    if _memory is None:
        limit = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
            try:
                with open(path) as f:
                    text = f.read().strip()
            except OSError:
                continue
            if text.isdigit():
                limit = min(limit, int(text))
        _memory = limit
    return _memory


def _recv_frames(sock, populate=True):
    """An object's frames. `populate=False` where a peer's header alone says
    how big (the server): an object larger than this process's memory is
    refused before a byte of it is kept, and memory is committed as the
    bytes arrive."""
    (count,) = struct.unpack("!I", _recv_exact(sock, 4))
    if count > _MAX_FRAMES:
        raise ConnectionError(f"{count} frames: not an atl object")
    lengths = struct.unpack(f"!{count}Q", _recv_exact(sock, 8 * count))
    total = sum(lengths)
    if total > MAX_OBJECT:
        raise ConnectionError(f"an object of {total} bytes, over the {MAX_OBJECT} bound")
    if not populate and total > memory_limit():
        raise ConnectionError(f"an object of {total} bytes, more than this process's memory "
                              f"({memory_limit()} bytes)")
    return [_recv_exact(sock, n, populate) for n in lengths]


# --- credentials and addresses -------------------------------------------------------

_tls_dir = None  # set by configure(): None with insecure=True
_insecure = False
_supervisor = None  # "host:port"
_configured = False


def configure(address=None, tls_dir=None, insecure=False):
    """What atl.init() connected with: the object plane uses the same (a
    process that never connects: its environment, as atl.init() reads it)."""
    global _tls_dir, _insecure, _supervisor, _configured
    before = (_tls_dir, _insecure, _supervisor) if _configured else None
    _configured = True
    _supervisor = address or os.environ.get("ATL_ADDRESS")
    if insecure or (not tls_dir and not os.environ.get("ATL_TLS_DIR")
                    and os.environ.get("ATL_INSECURE")):
        _tls_dir, _insecure = None, True
    else:
        _tls_dir, _insecure = tls_dir or os.environ.get("ATL_TLS_DIR"), False
    if before is not None and before != (_tls_dir, _insecure, _supervisor):
        _restart()  # another job's credentials (a driver that connects anew): a new server


_contexts = {}  # server: bool -> the SSLContext made once (a handshake's files read once)


def _context(server):
    if not _configured:
        configure()
    if _insecure:
        return None
    if server not in _contexts:
        _contexts[server] = _make_context(server)
    return _contexts[server]


def _make_context(server):
    ssl = _ssl()
    if not _tls_dir:
        raise ObjectLostError("the object plane has no TLS credentials (atl.init() first)")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER if server else ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(os.path.join(_tls_dir, "cert.pem"), os.path.join(_tls_dir, "key.pem"))
    ctx.load_verify_locations(os.path.join(_tls_dir, "ca.pem"))
    ctx.verify_mode = ssl.CERT_REQUIRED
    if not server:
        ctx.check_hostname = False  # the job's certificates name no host: the CA is the check
    return ctx


def _split(address):
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def _local_ip():
    """The address this process reaches the supervisor from: the pods reach it there."""
    if not _configured:
        configure()
    if _supervisor:
        host, port = _split(_supervisor)
        try:
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            with socket.socket(family, socket.SOCK_DGRAM) as s:
                s.connect((host, port))
                return s.getsockname()[0]
        except OSError:
            pass
    return "127.0.0.1"


# --- the server -----------------------------------------------------------------------


# Bounds of the server. A stranger (no job certificate) never gets a thread:
# handshakes run on the server's one event loop, at most _MAX_PENDING at once
# (_MAX_PENDING_PER_SOURCE from one address), each within _HANDSHAKE_S. A
# member's connection gets a thread of its own (a direct actor call may run
# long), at most _MAX_SERVED at once (_MAX_SERVED_PER_SOURCE from one
# address); one idle for _IDLE_S is closed (the client drops its kept ones
# before that). A transfer that stops moving for _TRANSFER_S is dropped.
_MAX_PENDING = 4096
_MAX_PENDING_PER_SOURCE = 1024
_HANDSHAKE_S = 10
_MAX_SERVED = 2048
_MAX_SERVED_PER_SOURCE = 1024  # an async actor's 1000 calls at once from one caller
_IDLE_S = 300
_TRANSFER_S = 120
_SAY_EVERY_S = 30  # refusals are counted, and said at most this often


class _Server:
    def __init__(self):
        ip = _local_ip()
        family = socket.AF_INET6 if ":" in ip else socket.AF_INET
        self._sock = socket.socket(family, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((ip, 0))
        self._sock.listen(512)
        self._sock.setblocking(False)
        port = self._sock.getsockname()[1]
        self.address = f"[{ip}]:{port}" if family == socket.AF_INET6 else f"{ip}:{port}"
        try:  # the same host's readers map big frames instead (see _HostServer)
            self._host = _HostServer(self.address) if hasattr(socket, "send_fds") else None
        except OSError:
            self._host = None
        self._ctx = _context(server=True)
        self._closed = False
        self._lock = threading.Lock()
        self._served = {}  # source address -> connections being served
        self.counts = {}  # what was refused or dropped, by why
        self._said_at = 0.0
        threading.Thread(target=self._loop, daemon=True, name="atl-objects").start()

    def _call(self, conn, key):
        """A direct actor call to the actor whose name hashes to `key`."""
        (m,) = struct.unpack("!Q", _recv_exact(conn, 8))
        if m > MAX_OBJECT:
            raise ConnectionError("a call over the object bound")
        request = _recv_exact(conn, m, populate=False)
        handler = _actors.get(key)
        if handler is None:
            why = b"no such actor in this process (it was closed)"
            conn.sendall(b"N" + struct.pack("!I", len(why)) + why)
            return
        reply = handler(bytes(request))
        conn.sendall(b"K" + struct.pack("!Q", len(reply)))
        view = memoryview(reply)
        for i in range(0, len(view), 1 << 24):
            conn.sendall(view[i:i + (1 << 24)])

    def close(self):
        self._closed = True
        if self._host is not None:
            self._host.close()
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()

    def _count(self, why):
        """One more refusal or drop, said (to stderr) at most every _SAY_EVERY_S."""
        import time
        with self._lock:
            self.counts[why] = self.counts.get(why, 0) + 1
            now = time.monotonic()
            if now - self._said_at < _SAY_EVERY_S:
                return
            self._said_at = now
            counts = ", ".join(f"{n} {w}" for w, n in sorted(self.counts.items()))
        import sys
        print(f"atl: object server at {self.address}: so far {counts}", file=sys.stderr,
              flush=True)

    def _drop_pending(self, conn, why=None):
        """`conn` leaves the handshakes (closed, and counted, with a `why`)."""
        try:
            self._sel.unregister(conn)
        except (KeyError, ValueError):
            pass
        _, source = self._pending.pop(conn, (0, None))
        if source is not None:
            self._per_source[source] -= 1
            if not self._per_source[source]:
                del self._per_source[source]
        if why:
            self._count(why)
            try:
                conn.close()
            except OSError:
                pass

    def _loop(self):
        """Accepts, and runs every pending TLS handshake, on one thread; a
        member's connection then goes to a thread of its own. Survives every
        error but its own socket's closing."""
        import selectors
        import time
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._sock, selectors.EVENT_READ)
        self._pending = {}  # conn -> (deadline, source), oldest first
        self._per_source = {}  # source -> pending count
        while not self._closed:
            try:
                events = self._sel.select(timeout=1.0)
            except (OSError, ValueError):
                if self._closed:
                    break
                time.sleep(0.05)
                continue
            for key, _ in events:
                conn = key.fileobj
                if conn is self._sock:
                    self._accept_some()
                    continue
                if conn not in self._pending:
                    continue  # dropped by an accept in this same round
                try:
                    conn.do_handshake()
                except ssl.SSLWantReadError:
                    self._sel.modify(conn, selectors.EVENT_READ)
                    continue
                except ssl.SSLWantWriteError:
                    self._sel.modify(conn, selectors.EVENT_WRITE)
                    continue
                except (OSError, ValueError):  # ssl's errors are OSErrors
                    self._drop_pending(conn, "failed handshakes")
                    continue
                source = self._pending[conn][1]
                self._drop_pending(conn)
                self._start(conn, source)
            now = time.monotonic()
            for conn in [c for c, (deadline, _) in self._pending.items() if deadline < now]:
                self._drop_pending(conn, "handshakes timed out")
        for conn in list(self._pending):
            self._drop_pending(conn)
            conn.close()
        self._sel.close()

    def _accept_some(self):
        import selectors
        import time
        for _ in range(64):
            try:
                conn, peer = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                if self._closed:
                    return
                # Out of descriptors or memory, an aborted connection: this
                # one is lost, the server is not.
                self._count("accept errors")
                time.sleep(0.05)
                return
            source = peer[0]
            if self._ctx is None:  # --insecure: no handshake
                self._start(conn, source)
                continue
            # Full: the oldest handshake (of this source, when it is the one
            # over its share) makes room. Idle connections left open cannot
            # keep a member out; it completes its handshake in milliseconds.
            if self._per_source.get(source, 0) >= _MAX_PENDING_PER_SOURCE:
                oldest = next(c for c, (_, src) in self._pending.items() if src == source)
                self._drop_pending(oldest, "handshakes dropped (too many at once)")
            elif len(self._pending) >= _MAX_PENDING:
                self._drop_pending(next(iter(self._pending)),
                                   "handshakes dropped (too many at once)")
            try:
                conn.setblocking(False)
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                tls = self._ctx.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
                self._sel.register(tls, selectors.EVENT_READ)
            except (OSError, ValueError):
                self._count("failed handshakes")
                conn.close()
                continue
            self._pending[tls] = (time.monotonic() + _HANDSHAKE_S, source)
            self._per_source[source] = self._per_source.get(source, 0) + 1

    def _start(self, conn, source):
        """A thread for a member's connection, within the bounds."""
        with self._lock:
            total = sum(self._served.values())
            if total >= _MAX_SERVED or self._served.get(source, 0) >= _MAX_SERVED_PER_SOURCE:
                refused = True
            else:
                refused = False
                self._served[source] = self._served.get(source, 0) + 1
        if refused:
            self._count("connections refused (too many served at once)")
            conn.close()
            return
        try:
            threading.Thread(target=self._serve, args=(conn, source), daemon=True,
                             name="atl-objects-conn").start()
        except RuntimeError:  # can't start new thread (a pod's pids.max)
            self._done(source)
            self._count("connections refused (no thread)")
            conn.close()

    def _done(self, source):
        with self._lock:
            self._served[source] -= 1
            if not self._served[source]:
                del self._served[source]

    def _serve(self, conn, source):
        try:
            conn.setblocking(True)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while True:
                conn.settimeout(_IDLE_S)  # waiting for the next request
                try:
                    head = conn.recv(17)
                except socket.timeout:
                    return  # idle: the client opens a new one when it needs it
                if not head:
                    return
                conn.settimeout(_TRANSFER_S)  # a request that stops moving is dropped
                if len(head) < 17:
                    head += _recv_exact(conn, 17 - len(head))
                op, oid = head[:1], bytes(head[1:17])
                if op == b"G":
                    frames = _store.get(oid)
                    if frames is None:
                        why = b"no such object here (freed, or never put)"
                        conn.sendall(b"N" + struct.pack("!I", len(why)) + why)
                    else:
                        conn.sendall(b"K")
                        _send_frames(conn, frames)
                elif op == b"P":
                    try:
                        frames = _recv_frames(conn, populate=False)
                    except ConnectionError:
                        self._count("puts refused (over a bound)")
                        raise
                    _store.put(oid, frames)
                    conn.sendall(b"K")
                elif op == b"H":
                    conn.sendall(b"K" if _store.hold(oid) else b"N")
                elif op == b"R":
                    _store.release(oid)
                    conn.sendall(b"K")
                elif op == b"B":
                    (at_least,) = struct.unpack("!Q", _recv_exact(conn, 8))
                    taken = _streams.wait(oid, at_least, BACKPRESSURE_POLL_S)
                    conn.sendall(b"K" + struct.pack("!Q", taken))
                elif op == b"C":
                    conn.settimeout(None)  # the actor's method takes what it takes
                    self._call(conn, oid)
                else:
                    return  # not atl's protocol: drop the connection
        except (OSError, ConnectionError, struct.error, ValueError):  # ssl's errors are OSErrors
            pass
        finally:
            self._done(source)
            try:
                conn.close()
            except OSError:
                pass


_server = None
_server_lock = threading.Lock()


def address():
    """This process's object server ("host:port"), started on first use."""
    global _server
    with _server_lock:
        if _server is None:
            _server = _Server()
        return _server.address


def _restart():
    global _server
    with _server_lock:
        server, _server = _server, None
    if server is not None:
        server.close()
    _connections.clear()
    _host_client.clear()
    _contexts.clear()


def is_local(owner):
    return _server is not None and owner == _server.address


# --- the client: one connection per owner, reused ---------------------------------


# A kept connection idle this long is not used again: the server closes one
# idle for _IDLE_S, and a request on it (a direct call is never retried)
# would take that for the owner's end.
_KEEP_S = _IDLE_S - 60


class _Connections:
    def __init__(self):
        self._lock = threading.Lock()
        self._idle = {}  # owner -> [(socket, monotonic time it was kept)]

    def keep(self, owner, sock):
        import time
        with self._lock:
            self._idle.setdefault(owner, []).append((sock, time.monotonic()))

    def _take(self, owner):
        """A kept connection to `owner` that is fresh enough, or None."""
        import time
        stale = []
        sock = None
        with self._lock:
            pool = self._idle.get(owner) or []
            while pool:
                candidate, kept_at = pool.pop()
                if time.monotonic() - kept_at < _KEEP_S:
                    sock = candidate
                    break
                stale.append(candidate)
        for old in stale:
            old.close()
        return sock

    def clear(self):
        with self._lock:
            idle, self._idle = self._idle, {}
        for socks in idle.values():
            for sock, _ in socks:
                sock.close()

    def _open(self, owner):
        host, port = _split(owner)
        sock = socket.create_connection((host, port), timeout=30)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        ctx = _context(server=False)
        if ctx is not None:
            sock = ctx.wrap_socket(sock)
        sock.settimeout(None)
        return sock

    def request(self, owner, send, receive, retry=True):
        """send(sock), then receive(sock) on a connection to `owner`; one
        retry on a fresh connection when a reused one turns out closed
        (retry=False: not for a request that may have been carried out)."""
        for attempt in (0, 1):
            sock = self._take(owner) if attempt == 0 else None
            fresh = sock is None
            sent = False
            try:
                if fresh:
                    sock = self._open(owner)
                send(sock)
                sent = True
                result = receive(sock)
            except (OSError, ConnectionError, _Gone) as e:
                try:
                    if sock is not None:
                        sock.close()
                except OSError:
                    pass
                if isinstance(e, _Gone):
                    raise
                if fresh or not retry:
                    lost = ObjectLostError(f"the process at {owner} cannot be reached ({e}): "
                                           f"it ended")
                    lost.sent = sent  # False: the request never left (its connect failed)
                    raise lost from None
                continue
            self.keep(owner, sock)
            return result


_connections = _Connections()


def preconnect(owner):
    """A connection to `owner` opened now (the TLS handshake done), kept for
    the next request; nothing when it cannot be opened (the request says why)."""
    try:
        sock = _connections._open(owner)
    except OSError:
        return
    _connections.keep(owner, sock)


def fetch(owner, oid):
    """The frames of object `oid` from `owner` (this process's own: no copy)."""
    if is_local(owner):
        frames = _store.get(oid)
        if frames is None:
            raise ObjectLostError(f"object {oid.hex()} was freed")
        return frames
    frames = _host_client.fetch(owner, oid)
    if frames is not None:
        return frames

    def receive(sock):
        status = _recv_exact(sock, 1)
        if status == b"K":
            return _recv_frames(sock)
        (n,) = struct.unpack("!I", _recv_exact(sock, 4))
        return ObjectLostError(f"object {oid.hex()} at {owner}: "
                               f"{_recv_exact(sock, n).decode('utf-8', 'replace')}")
    result = _connections.request(owner, lambda s: s.sendall(b"G" + oid), receive)
    if isinstance(result, Exception):
        raise result
    return result


def push(owner, oid, frames):
    """Hands `frames` to `owner` as object `oid` (a big result to its caller)."""
    if _host_client.push(owner, oid, frames):
        return

    def send(sock):
        sock.sendall(b"P" + oid)
        _send_frames(sock, frames)
    _connections.request(owner, send, lambda s: _recv_exact(s, 1))


BACKPRESSURE_POLL_S = 1.0  # a paused generator's ask is answered within this at the latest


def wait_consumed(owner, slot, at_least, known=0):
    """Returns once `owner`'s next has taken `at_least` items of the
    streaming call at `slot`, or it dropped the generator, or it cannot be
    reached (it ended: the pushes that follow say so): how many it is known
    to have taken (Streams.GONE then). `known`, the last such answer: no
    request while it says enough already."""
    if at_least <= known:
        return known
    request = b"B" + slot + struct.pack("!Q", at_least)
    while True:
        try:
            answer = _connections.request(owner, lambda s: s.sendall(request),
                                          lambda s: _recv_exact(s, 9))
        except (OSError, ConnectionError, ObjectLostError, _Gone):
            return Streams.GONE
        if answer[:1] != b"K":
            return Streams.GONE
        taken = struct.unpack("!Q", answer[1:9])[0]
        if taken >= at_least:
            return taken


def hold(owner, oid):
    """One more pin on `owner`'s object `oid`, for a ref sent on by a borrower."""
    if _connections.request(owner, lambda s: s.sendall(b"H" + oid),
                            lambda s: _recv_exact(s, 1)) != b"K":
        raise ObjectLostError(f"object {oid.hex()} at {owner} was freed")


# --- direct actor calls ----------------------------------------------------------------

_actors = {}  # actor_key(name) -> handler(request bytes) -> reply bytes


def actor_key(name):
    import hashlib
    return hashlib.blake2b(name.encode(), digest_size=16).digest()


def serve_actor(name, handler):
    """Takes calls to actor `name` straight from callers on this process's
    object server (they learn its address from the actor, through the
    supervisor, once); returns the address."""
    _actors[actor_key(name)] = handler
    return address()


def unserve_actor(name):
    _actors.pop(actor_key(name), None)


def call_direct(owner, name, request, alive, check_every=1.0):
    """`request` to actor `name` at `owner`; its reply. While it waits, alive()
    is asked every `check_every` s (the supervisor's word: a hung host is
    dropped from its directory after the heartbeat timeout); False: the
    connection is dropped and ObjectLostError raised."""
    key = actor_key(name)

    def send(sock):
        sock.sendall(b"C" + key + struct.pack("!Q", len(request)) + request)

    def receive(sock):
        sock.settimeout(check_every)
        try:
            while True:
                try:
                    status = sock.recv(1)
                    break
                except socket.timeout:
                    if not alive():
                        raise _Gone("the actor is no longer in the job's directory")
            sock.settimeout(None)
            if status == b"K":
                (m,) = struct.unpack("!Q", _recv_exact(sock, 8))
                return bytes(_recv_exact(sock, m))
            if not status:
                raise ConnectionError("the actor's process closed the connection")
            (n,) = struct.unpack("!I", _recv_exact(sock, 4))
            return _Gone(_recv_exact(sock, n).decode("utf-8", "replace"))
        finally:
            try:
                sock.settimeout(None)
            except OSError:
                pass
    try:
        result = _connections.request(owner, send, receive, retry=False)
    except _Gone as e:
        raise ObjectLostError(str(e)) from None
    if isinstance(result, _Gone):
        raise ObjectLostError(str(result))
    return result


class _Gone(Exception):
    pass


# --- releases, off the collector's thread ----------------------------------------------

_releases = queue.Queue()
_release_thread = None


def _send_releases():
    while True:
        owner, oid = _releases.get()
        if owner is None:
            return
        try:
            _connections.request(owner, lambda s: s.sendall(b"R" + oid),
                                 lambda s: _recv_exact(s, 1))
        except (ObjectLostError, OSError):
            pass  # the owner is gone, and its objects with it


def release_later(owner, oid):
    """A borrowed ref was collected: its owner may free the object."""
    global _release_thread
    if is_local(owner):
        _store.release(oid)
        return
    if _release_thread is None:
        _release_thread = threading.Thread(target=_send_releases, daemon=True,
                                           name="atl-objects-release")
        _release_thread.start()
    _releases.put((owner, oid))


@atexit.register
def _flush_releases():
    """A task's process ending: the pins its refs held go back before it does."""
    if _release_thread is None:
        return
    _releases.put((None, None))
    _release_thread.join(timeout=5)


def on_collect(obj, callback, *args):
    """callback(*args) once `obj` is collected (never at interpreter exit)."""
    f = weakref.finalize(obj, callback, *args)
    f.atexit = False
    return f
