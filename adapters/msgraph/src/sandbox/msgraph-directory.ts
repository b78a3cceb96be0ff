import { createHash } from 'node:crypto';

/** A user as Graph's directory answers `GET /me` and `GET /users/{id | userPrincipalName}`. */
export interface SandboxUser {
  readonly id: string;
  readonly userPrincipalName: string;
}

/** The user the sandbox's token signs in as, unless the options make it an app-only token (`signedInUser: null`). */
export const SANDBOX_SIGNED_IN_USER: SandboxUser = {
  id: '6e5c3b1a-0f2d-4c8e-9a7b-1d2e3f4a5b6c',
  userPrincipalName: 'me@contoso.test',
};

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ME = /^\/(?:v1\.0|beta)\/me\/?$/i;
const USER = /^\/(?:v1\.0|beta)\/users\/([^/]+)\/?$/i;

/** The sandbox's users: every spelling names a user (a UPN in any case; an id in any case), each with one id. */
export function createDirectory(signedIn: SandboxUser | null) {
  /** UPNs given to another user than the one they first named (a UPN freed and reused). */
  const assigned = new Map<string, string>();
  const idOf = (spelling: string): string => {
    const s = spelling.toLowerCase();
    if (assigned.has(s)) return assigned.get(s)!;
    if (signedIn && (s === signedIn.userPrincipalName.toLowerCase() || s === signedIn.id)) return signedIn.id;
    if (GUID.test(s)) return s;
    const h = createHash('sha256').update(s).digest('hex');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
  };
  /** The answer to a directory GET, or null for another request. */
  const answer = (method: string, path: string): { status: number; code?: string; body: unknown } | null => {
    if (method !== 'GET') return null;
    if (ME.test(path))
      return signedIn
        ? { status: 200, body: { id: signedIn.id } }
        : { status: 400, code: 'BadRequest', body: '/me request is only valid with delegated authentication flow.' };
    const m = USER.exec(path);
    return m ? { status: 200, body: { id: idOf(decodeURIComponent(m[1]!)) } } : null;
  };
  const assign = (upn: string, id: string) => void assigned.set(upn.toLowerCase(), id.toLowerCase());
  return { idOf, answer, assign };
}
