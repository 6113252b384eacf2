/**
 * errno numbers → names for Linux (x86_64 and arm64 share these values). Only the names booblik can
 * meet are listed; any other number prints as `errno <n>`.
 */
const ERRNO_NAMES: Record<number, string> = {
  1: "EPERM",
  2: "ENOENT",
  3: "ESRCH",
  4: "EINTR",
  5: "EIO",
  9: "EBADF",
  11: "EAGAIN",
  12: "ENOMEM",
  13: "EACCES",
  14: "EFAULT",
  16: "EBUSY",
  17: "EEXIST",
  18: "EXDEV",
  19: "ENODEV",
  20: "ENOTDIR",
  21: "EISDIR",
  22: "EINVAL",
  23: "ENFILE",
  24: "EMFILE",
  27: "EFBIG",
  28: "ENOSPC",
  29: "ESPIPE",
  30: "EROFS",
  32: "EPIPE",
  38: "ENOSYS",
  75: "EOVERFLOW",
  88: "ENOTSOCK",
  95: "EOPNOTSUPP",
  104: "ECONNRESET",
  107: "ENOTCONN",
  122: "EDQUOT",
};

export const ESRCH = 3;
export const EINTR = 4;
export const EAGAIN = 11;
export const ENOSPC = 28;

export function errnoName(errno: number): string {
  return ERRNO_NAMES[errno] ?? `errno ${errno}`;
}

/** Reverse lookup for errors thrown by node:fs, which carry the name (`err.code`) and a negative errno. */
export function errnoFromName(name: string): number {
  for (const key in ERRNO_NAMES) {
    if (ERRNO_NAMES[key] === name) return Number(key);
  }
  return 0;
}
