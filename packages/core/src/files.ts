/** A write that fails once its file is open (ENOSPC on a full disk) carries no path, unlike a failed open: given it
 * here, in the error's `path` and in its message as Node words an open's, so the caller learns which file. */
export function namingPath(err: unknown, path: string): unknown {
  const e = err as NodeJS.ErrnoException | null;
  if (typeof e?.code === 'string' && e.path === undefined)
    Object.assign(e, { path, message: `${e.message} '${path}'` });
  return err;
}
