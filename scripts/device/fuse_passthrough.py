#!/usr/bin/env python3
"""A passthrough FUSE file system (fusepy over libfuse2) for scripts/device/cluster_cases.sh: every read and write
goes through this process, as on sshfs, s3fs or gcsfuse. Usage: fuse_passthrough.py ROOT MOUNT [--delay-ms MS]"""
import errno, os, sys, time, argparse
from fuse import FUSE, FuseOSError, Operations

class Pass(Operations):
    def __init__(self, root, delay): self.root, self.delay = root, delay
    def _p(self, path): return os.path.join(self.root, path.lstrip("/"))
    def getattr(self, path, fh=None):
        try: st = os.lstat(self._p(path))
        except OSError as e: raise FuseOSError(e.errno)
        return {k: getattr(st, k) for k in ("st_atime", "st_ctime", "st_gid", "st_mode", "st_mtime", "st_nlink", "st_size", "st_uid")}
    def readdir(self, path, fh): return [".", ".."] + os.listdir(self._p(path))
    def open(self, path, flags): return os.open(self._p(path), flags)
    def create(self, path, mode, fi=None): return os.open(self._p(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    def read(self, path, size, offset, fh):
        if self.delay: time.sleep(self.delay)
        os.lseek(fh, offset, 0); return os.read(fh, size)
    def write(self, path, data, offset, fh): os.lseek(fh, offset, 0); return os.write(fh, data)
    def truncate(self, path, length, fh=None):
        with open(self._p(path), "r+") as f: f.truncate(length)
    def flush(self, path, fh): return 0
    def release(self, path, fh): return os.close(fh)
    def fsync(self, path, datasync, fh): return os.fsync(fh)
    def mkdir(self, path, mode): return os.mkdir(self._p(path), mode)
    def unlink(self, path): return os.unlink(self._p(path))
    def rename(self, old, new): return os.rename(self._p(old), self._p(new))
    def chmod(self, path, mode): return os.chmod(self._p(path), mode)
    def utimens(self, path, times=None): return os.utime(self._p(path), times)
    def statfs(self, path):
        s = os.statvfs(self._p(path))
        return {k: getattr(s, k) for k in ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files", "f_flag", "f_frsize", "f_namemax")}

ap = argparse.ArgumentParser(); ap.add_argument("root"); ap.add_argument("mount"); ap.add_argument("--delay-ms", type=float, default=0)
ap.add_argument("--name", default="gsremote")
a = ap.parse_args()
FUSE(Pass(a.root, a.delay_ms / 1000), a.mount, foreground=True, allow_other=True, nothreads=False, fsname=a.name, subtype=a.name)
