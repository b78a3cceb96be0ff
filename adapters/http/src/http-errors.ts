import type { Outcome, ProviderRefs } from '@retrysafe/contract';
import { callerRefusal, retryAfterOf } from '@retrysafe/contract/provider';
import { isReplayedAnswer } from '@retrysafe/contract/rules';
import { type HttpOperationSpec, readPath, ruleMatches, scalarText } from './http-operations.js';

/** `url`: the request's absolute URL, to resolve a relative `Location`. */
export interface HttpResponseView {
  readonly status: number;
  readonly headers: Readonly<Record<string, unknown>>;
  readonly data: unknown;
  readonly url: string;
}

export function readHeader(headers: Readonly<Record<string, unknown>>, name: string): string | undefined {
  const v = Object.entries(headers).find(([k]) => k.toLowerCase() === name.toLowerCase())?.[1];
  const first: unknown = Array.isArray(v) ? v[0] : v;
  return first === undefined || first === null ? undefined : String(first);
}

export function requestIdOf(spec: HttpOperationSpec, headers: HttpResponseView['headers']): { requestId?: string } {
  const requestId = spec.requestIdHeader ? readHeader(headers, spec.requestIdHeader) : undefined;
  return requestId !== undefined ? { requestId } : {};
}

export function providerRefAt(data: unknown, path: string | undefined): { providerRef?: string } {
  const ref = path ? scalarText(readPath(data, path)) : undefined;
  return ref !== undefined ? { providerRef: ref } : {};
}

export function absoluteLocation(res: HttpResponseView): string | undefined {
  const loc = readHeader(res.headers, 'location');
  return loc ? URL.parse(loc, res.url)?.toString() : undefined;
}

/** The fields a problem body names (RFC 9457 `invalid-params`, or `errors`); only names, never the provider's text (PII). */
function namedFields(data: unknown): { path: string; message: string }[] {
  if (typeof data !== 'object' || data === null) return [];
  const d = data as Record<string, unknown>;
  const list = Array.isArray(d['invalid-params']) ? d['invalid-params'] : Array.isArray(d.errors) ? d.errors : [];
  return list.slice(0, 20).flatMap((item) => {
    const r = (item ?? {}) as Record<string, unknown>;
    const raw = [r.name, r.field, r.path, r.pointer].find((v): v is string => typeof v === 'string' && v.length > 0);
    const path = (raw ?? '')
      .replace(/^#?\//, '')
      .split('/')
      .map((p) => (/^\d+$/.test(p) ? `[${p}]` : p))
      .join('.')
      .replace(/\.\[/g, '[');
    return path ? [{ path, message: 'named by the provider as invalid' }] : [];
  });
}

/** One response → one Outcome by the declaration; messages never carry the provider's text (PII). */
export function classifyResponse(spec: HttpOperationSpec, res: HttpResponseView, attempt: number): Outcome {
  const code =
    res.status >= 300 && spec.errors.codePath ? scalarText(readPath(res.data, spec.errors.codePath)) : undefined;
  const base: ProviderRefs = {
    status: res.status,
    ...(code !== undefined ? { code } : {}),
    ...requestIdOf(spec, res.headers),
  };
  const ra = retryAfterOf(readHeader(res.headers, 'retry-after'), readHeader(res.headers, 'date'));

  if (res.status >= 200 && res.status < 300) {
    if (res.status === 202 && spec.asyncReply) {
      const statusRef = absoluteLocation(res);
      const message = statusRef ? 'accepted; status resource at Location' : 'accepted without a Location header';
      return { kind: 'in-progress', ...base, ...ra, ...(statusRef ? { statusRef } : {}), message };
    }
    // The card's replay indicator (e.g. `Idempotent-Replayed: true`): the provider answered from its stored result.
    const ri = spec.card.storedResult.replayIndicator?.value;
    const replayed = isReplayedAnswer(ri, (name) => readHeader(res.headers, name));
    const refs = { ...base, ...providerRefAt(res.data, spec.refPath) };
    return { kind: replayed ? 'replayed' : 'succeeded', result: res.data, ...refs };
  }

  const label = `HTTP ${res.status}${code !== undefined ? ' ' + code : ''}`;
  const pc = spec.precondition;
  // On the first attempt the caller's validator was stale: nothing of ours was applied. On a re-send our own
  // earlier attempt may be what moved the validator on, so the runner must look up instead.
  if (pc && res.status === (pc.failedStatus ?? 412)) {
    if (attempt <= 1) {
      const message = `${label}: precondition failed (the resource changed since the validator was read)`;
      return { kind: 'rejected', reason: 'conflict', message, ...base };
    }
    const message = `${label}: precondition failed on a re-send; an earlier attempt may have applied`;
    return { kind: 'unknown', cause: 'other', message, ...base, ...ra };
  }

  const rule = spec.errors.rules.find((r) => ruleMatches(r, res.status, code));
  if (rule?.outcome === 'rejected') {
    const fields = namedFields(res.data);
    const path = spec.errors.createdPath;
    const created = path === undefined ? undefined : scalarText(readPath(res.data, path));
    const extra = { ...(fields.length ? { fields } : {}), ...(created !== undefined ? { created } : {}) };
    return { kind: 'rejected', reason: rule.reason, message: label, ...base, ...extra };
  }
  const refused = rule ? undefined : callerRefusal(res.status);
  if (refused)
    return { kind: 'rejected', reason: refused, message: `${label} (not in the operation's error mapping)`, ...base };
  if (rule?.outcome === 'not-applied' || rule?.outcome === 'in-progress')
    return { kind: rule.outcome, message: label, ...base, ...ra };
  const cause = (rule?.outcome === 'unknown' && rule.cause) || (res.status >= 500 ? 'server-error' : 'other');
  const message = rule ? label : `${label} (not in the operation's error mapping)`;
  return { kind: 'unknown', cause, message, ...base, ...ra };
}
