"""Reading p2pshim run logs (docs/LOG_FORMAT.md) from Python.

    import p2pshim.logs
    log = p2pshim.logs.read("run.jsonl")        # or run.jsonl.gz
    for c in p2pshim.logs.copies(log, cross=True):
        print(c["src"]["dev"], c["dst"]["dev"], c["bytes"], c["reason"])
    job = p2pshim.logs.read_dir("p2pshim-run-folder")
    df = p2pshim.logs.to_frame(job, type="decision")   # needs pandas

Records are the log's lines as plain dicts, in file order. Lines are read
as `p2pshim report` reads them: blank lines are ignored, a line that is
not a JSON object (or longer than 64 MiB, or a later header of a version
this reader does not know) is skipped and counted, a torn last line (the
writer was killed mid-line) is dropped, and line types this reader does
not know are kept. Only a file whose first line is no run log header is
refused (LogError). gzip logs are recognised by their first bytes.
Only the standard library is needed; to_frame needs pandas.
"""
import glob
import json
import os
import warnings
import zlib

__all__ = ["LogError", "Log", "Logs", "read", "read_dir", "copies", "to_frame",
           "REASON_CLASS", "VERSIONS", "MAX_LINE"]

VERSIONS = (1, 2)          # the format versions read
MAX_LINE = 64 << 20        # longer lines are no shim's: skipped, as the report does
_CHUNK = 1 << 16

# The class of each decision reason (docs/LOG_FORMAT.md, "decision").
REASON_CLASS = {
    "host-memory": "local", "same-device": "local", "unknown-pointer": "local",
    "upgraded": "upgrade", "shim-access": "upgrade", "upgraded-alias": "upgrade",
    "upgraded-relay": "upgrade", "app-enabled-peer": "app-peer",
    "pair-excluded": "staged", "below-min-bytes": "staged", "cannot-peer": "staged",
    "enable-failed": "staged", "observe-would-upgrade": "staged",
    "link-untrusted": "staged", "link-slower": "staged", "alias-failed": "staged",
    "relay-failed": "staged",
}


class LogError(ValueError):
    """The file cannot be read as a run log: the message names it and says why."""


def _gunzip(f, name):
    """Yields the inflated bytes of the gzip file f. Members one after
    another read as one stream; bytes after a member that start no member
    are ignored (as `gzip -dc` and `p2pshim report` do)."""
    d = zlib.decompressobj(wbits=31)
    fed = out_seen = False   # of the member being read
    members = 0
    data = b""
    while True:
        if not data:
            data = f.read(_CHUNK)
            if not data:
                break
        fed = True
        try:
            out = d.decompress(data)
        except zlib.error as e:
            if members > 0 and not out_seen:
                return   # no member starts here: trailing bytes
            raise LogError(f"{name}: corrupt gzip data: {e}") from None
        data = b""
        if out:
            out_seen = True
            yield out
        if d.eof:
            members += 1
            data = d.unused_data
            d = zlib.decompressobj(wbits=31)
            fed = out_seen = False
    if fed or members == 0:
        raise LogError(f"{name}: truncated gzip file")


def _chunks(path):
    """The file's bytes in chunks, inflated when its first bytes say gzip."""
    with open(path, "rb") as f:
        head = f.read(2)
        f.seek(0)
        if head == b"\x1f\x8b":
            yield from _gunzip(f, path)
            return
        while True:
            b = f.read(_CHUNK)
            if not b:
                return
            yield b


def _lines(path):
    """Yields (bytes, whole, torn) per line: whole is False past MAX_LINE
    (the bytes are then cut), torn is True for a last line without its
    newline."""
    buf = bytearray()
    over = False
    for chunk in _chunks(path):
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            piece = chunk[start:] if nl < 0 else chunk[start:nl]
            if not over:
                buf += piece
                if len(buf) > MAX_LINE:
                    del buf[MAX_LINE:]
                    over = True
            if nl < 0:
                break
            yield bytes(buf), not over, False
            buf.clear()
            over = False
            start = nl + 1
    if buf or over:
        yield bytes(buf), not over, True


def _reject_constant(name):
    raise ValueError(f"not JSON: {name}")


def _parse(text):
    """The JSON value of a line, or raises ValueError (strict UTF-8; no NaN)."""
    return json.loads(text.decode("utf-8"), parse_constant=_reject_constant)


def _header_problem(o):
    if o.get("format") != "p2pshim-log":
        return 'not a p2pshim run log header (format is not "p2pshim-log")'
    v = o.get("version")
    if type(v) is int and v in VERSIONS:
        return None
    return f"log format version {v}: this reader reads versions 1 and 2"


class Log:
    """One run log: a read-only sequence of its records (plain dicts, every
    line but headers and footers, in file order), with

    path         the file
    headers      every header line, one per process image, in file order
    header       the first of them
    footers      the footer lines
    footer       the last footer, or None
    cut_short    the last image has no footer (a crash, a kill, a full disk)
    cut_reason   the `detail` of the shim's log-cut event, or None
    bad_lines    how many lines were skipped; first_bad: (line number, why)
    torn_tail    the last line was torn and dropped
    image_of(i)  the header (process image) record i belongs to
    """

    def __init__(self, path):
        self.path = path
        self.headers = []
        self.footers = []
        self.records = []
        self._image = []
        self.cut_short = False
        self.cut_reason = None
        self.bad_lines = 0
        self.first_bad = None
        self.torn_tail = False

    @property
    def header(self):
        return self.headers[0]

    @property
    def footer(self):
        return self.footers[-1] if self.footers else None

    def image_of(self, i):
        return self.headers[self._image[i]]

    def __len__(self):
        return len(self.records)

    def __getitem__(self, i):
        return self.records[i]

    def __iter__(self):
        return iter(self.records)

    def __repr__(self):
        return (f"<p2pshim.logs.Log {self.path!r}: {len(self.headers)} image(s), "
                f"{len(self.records)} records, {self.bad_lines} bad lines>")

    def _bad(self, lineno, why):
        self.bad_lines += 1
        if self.first_bad is None:
            self.first_bad = (lineno, why)


def read(path):
    """Reads one run log (plain or gzip) into a Log. Raises LogError when
    its first line is no header of a version read here, or the gzip data
    is cut or damaged; OSError when it cannot be opened."""
    name = os.fspath(path)
    log = Log(name)
    lineno = 0
    for text, whole, torn in _lines(name):
        lineno += 1
        text = text.rstrip(b"\r\n\t ")
        if whole and not text:
            continue
        o = None
        why = f"line longer than {MAX_LINE} bytes"
        if whole:
            try:
                o = _parse(text)
            except ValueError as e:
                why = f"invalid JSON: {e}"
        if o is None and torn and log.headers:
            log.torn_tail = True   # the writer was stopped mid-line
            break
        if not log.headers:
            problem = why if o is None else (
                "not a JSON object" if not isinstance(o, dict) else
                "the first line is not a p2pshim log header" if o.get("type") != "header" else
                _header_problem(o))
            if problem:
                raise LogError(f"{name}: line {lineno}: {problem}")
        if o is None:
            log._bad(lineno, why)
        elif not isinstance(o, dict):
            log._bad(lineno, "not a JSON object")
        elif o.get("type") == "header":
            problem = _header_problem(o)
            if problem:
                log._bad(lineno, problem)
            else:
                log.headers.append(o)
                log.cut_short = True
        elif o.get("type") == "footer":
            log.footers.append(o)
            log.cut_short = False
        else:
            if o.get("type") == "event" and o.get("what") == "log-cut" and log.cut_reason is None:
                log.cut_reason = str(o.get("detail", ""))
            log.records.append(o)
            log._image.append(len(log.headers) - 1)
    if not log.headers:
        raise LogError(f"{name}: empty: no header line")
    return log


class Logs(list):
    """The logs of a run folder (a list of Log), with `skipped`: a
    (path, why) pair per file left out."""

    def __init__(self, logs=(), skipped=()):
        super().__init__(logs)
        self.skipped = list(skipped)


def read_dir(folder, strict=False):
    """Reads a run folder's *.jsonl and *.jsonl.gz files, sorted by name,
    into Logs. A file that is no readable run log is left out with a
    warning naming it (as `p2pshim report` does), or, with strict, raises
    LogError."""
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise LogError(f"{folder}: not a folder")
    paths = sorted(glob.glob(os.path.join(glob.escape(folder), "*.jsonl")) +
                   glob.glob(os.path.join(glob.escape(folder), "*.jsonl.gz")))
    logs = Logs()
    for p in paths:
        try:
            if not os.path.isfile(p):
                raise LogError(f"{p}: not a regular file")
            logs.append(read(p))
        except (LogError, OSError) as e:
            if strict:
                raise LogError(str(e)) from e
            why = str(e) if isinstance(e, LogError) else f"{p}: {e.strerror}"
            warnings.warn(f"skipping {why}", stacklevel=2)
            logs.skipped.append((p, why))
    return logs


def _records(source):
    """(record, log or None, index) of a Log, a list of them, or dicts."""
    if isinstance(source, Log):
        for i, r in enumerate(source.records):
            yield r, source, i
    elif isinstance(source, (str, os.PathLike)):
        yield from _records(read(source))
    else:
        for item in source:
            if isinstance(item, Log):
                yield from _records(item)
            else:
                yield item, None, None


def _dev(end):
    return end.get("dev") if isinstance(end, dict) else None


def copies(source, *, src=None, dst=None, cross=None, action=None, reason=None,
           reason_class=None, api=None):
    """The decision records (one per intercepted copy) of a Log, a list of
    Logs or of records, as a list of dicts, keeping those that match every
    filter given: src/dst the device ordinal (-1 host memory), cross True
    for copies between two different GPUs (False: the others), action,
    reason, reason_class (REASON_CLASS) and api, each a value or a
    collection of values."""
    def want(value, filt):
        if filt is None:
            return True
        if isinstance(filt, (str, int)):
            return value == filt
        return value in filt

    out = []
    for r, _, _ in _records(source):
        if r.get("type") != "decision":
            continue
        s, d = _dev(r.get("src")), _dev(r.get("dst"))
        is_cross = isinstance(s, int) and isinstance(d, int) and s >= 0 and d >= 0 and s != d
        if cross is not None and is_cross != bool(cross):
            continue
        if not (want(s, src) and want(d, dst) and want(r.get("action"), action) and
                want(r.get("reason"), reason) and want(r.get("api"), api) and
                want(REASON_CLASS.get(r.get("reason"), "other"), reason_class)):
            continue
        out.append(r)
    return out


def _flat(d, prefix, row):
    for k, v in d.items():
        if isinstance(v, dict):
            _flat(v, f"{prefix}{k}_", row)
        else:
            row[prefix + k] = v


_CONTEXT = ("host", "pid", "rank", "process")


def to_frame(source, type=None):
    """A pandas DataFrame, one row per record of a Log, a list of Logs (a
    run folder) or of records; of the given line type only when type is
    set ("decision", "activity", "event", ...). Nested members are
    flattened with "_" (src_dev, activity_gbps). Rows of a Log also get
    `log` (the file) and the host, pid, rank and process of their image's
    header. Raises ImportError when pandas cannot be imported."""
    try:
        import pandas
    except ImportError as e:
        raise ImportError(
            "p2pshim.logs.to_frame needs pandas, which cannot be imported here "
            f"({e}); install it (pip install pandas) or use read() and copies(), "
            "which need only the standard library") from e
    rows = []
    for r, log, i in _records(source):
        if type is not None and r.get("type") != type:
            continue
        row = {}
        if log is not None:
            h = log.image_of(i)
            row["log"] = log.path
            for k in _CONTEXT:
                row[k] = h.get(k)
        _flat(r, "", row)
        rows.append(row)
    return pandas.DataFrame(rows)
