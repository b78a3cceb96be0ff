import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

// Checked before a server is built for the request: Host (loopback with the bound port, against DNS rebinding), Origin
// (absent, or listed), then the bearer token.
export interface HttpGuardOptions {
  /** Extra `Host` header values to accept (`name:port`, or a bare name for any port). Loopback names with the bound port are always accepted. */
  readonly allowedHosts?: readonly string[];
  /** Extra `Origin` values to accept (`scheme://name[:port]`). Loopback origins with the bound port are always accepted. */
  readonly allowedOrigins?: readonly string[];
  /** The bearer token clients must send. Default: a random token generated at start (read it from the returned `token`). */
  readonly token?: string;
}

export type GuardVerdict =
  | { readonly ok: true }
  | { readonly ok: false; readonly status: 401 | 403; readonly reason: string };

export interface HttpGuard {
  readonly token: string;
  check(req: IncomingMessage): GuardVerdict;
}

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];
const MIN_TOKEN_LENGTH = 16;

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

export function createHttpGuard(port: number, options: HttpGuardOptions = {}): HttpGuard {
  const token = options.token ?? randomBytes(32).toString('base64url');
  if (typeof token !== 'string' || token.length < MIN_TOKEN_LENGTH || /\s/.test(token)) {
    throw new TypeError(`MCP HTTP token: expected at least ${MIN_TOKEN_LENGTH} characters without spaces`);
  }
  const hostsWithPort = new Set(LOOPBACK_NAMES.map((n) => `${n}:${port}`));
  const anyPortHosts = new Set<string>();
  for (const h of options.allowedHosts ?? []) {
    const v = h.trim().toLowerCase();
    if (!v) continue;
    if (/:\d+$/.test(v)) hostsWithPort.add(v);
    else anyPortHosts.add(v);
  }
  const origins = new Set(LOOPBACK_NAMES.map((n) => `http://${n}:${port}`));
  for (const o of options.allowedOrigins ?? []) if (o.trim()) origins.add(o.trim().toLowerCase().replace(/\/+$/, ''));

  const hostOk = (raw: string | undefined): boolean => {
    if (!raw) return false;
    const v = raw.trim().toLowerCase();
    if (hostsWithPort.has(v)) return true;
    const name = v.replace(/:\d+$/, '');
    return anyPortHosts.has(name);
  };

  return {
    token,
    check(req) {
      if (!hostOk(req.headers.host)) return { ok: false, status: 403, reason: 'host not allowed' };
      const origin = req.headers.origin;
      if (origin !== undefined && !origins.has(origin.trim().toLowerCase()))
        return { ok: false, status: 403, reason: 'origin not allowed' };
      const auth = req.headers.authorization;
      const m = typeof auth === 'string' ? /^Bearer[ ]+(\S+)\s*$/i.exec(auth) : null;
      // Both sides hashed to 32 bytes, so the comparison's time leaks neither where they differ nor the length.
      if (!m || !timingSafeEqual(digest(m[1]!), digest(token)))
        return { ok: false, status: 401, reason: 'missing or wrong bearer token' };
      return { ok: true };
    },
  };
}
