import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export interface HttpGuardOptions {
  /** Extra `Host` values to accept (`name:port`, or a bare name for any port); loopback with the bound port always is. */
  readonly allowedHosts?: readonly string[];
  /** Extra `Origin` values to accept; loopback origins with the bound port always are. */
  readonly allowedOrigins?: readonly string[];
  /** The bearer token clients must send; default a random one (read it from the returned `token`). */
  readonly token?: string;
}

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];
const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

export function checkToken(token: string): string {
  if (token.length < 16 || /\s/.test(token))
    throw new TypeError('MCP HTTP token: expected at least 16 characters without spaces');
  return token;
}

// Host (loopback with the bound port, against DNS rebinding), Origin (absent, or listed), then the bearer token:
// the refusal's status and reason, or undefined when the request may go on.
export function createHttpGuard(port: number, options: HttpGuardOptions) {
  const token = checkToken(options.token ?? randomBytes(32).toString('base64url'));
  const norm = (v: string) => v.trim().toLowerCase();
  const hosts = new Set([
    ...LOOPBACK_NAMES.map((n) => `${n}:${port}`),
    ...(options.allowedHosts ?? []).map(norm).filter(Boolean),
  ]);
  const origins = new Set([
    ...LOOPBACK_NAMES.map((n) => `http://${n}:${port}`),
    ...(options.allowedOrigins ?? []).map((o) => norm(o).replace(/\/+$/, '')).filter(Boolean),
  ]);
  const hostOk = (raw = '') => hosts.has(norm(raw)) || hosts.has(norm(raw).replace(/:\d+$/, ''));
  const check = (req: IncomingMessage): { status: 401 | 403; reason: string } | undefined => {
    if (!hostOk(req.headers.host)) return { status: 403, reason: 'host not allowed' };
    const origin = req.headers.origin;
    if (origin !== undefined && !origins.has(norm(origin))) return { status: 403, reason: 'origin not allowed' };
    const m = /^Bearer[ ]+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    // Both sides hashed to 32 bytes, so the comparison's time leaks neither where they differ nor the length.
    if (!m || !timingSafeEqual(digest(m[1]!), digest(token)))
      return { status: 401, reason: 'missing or wrong bearer token' };
    return undefined;
  };
  return { token, check };
}
