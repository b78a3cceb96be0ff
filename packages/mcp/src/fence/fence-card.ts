import { defineCard, fact, type RetrySafetyCard } from '@retrysafe/contract';
import type { FenceConfig, FenceToolConfig } from './fence-config.js';

export const KEY_CHARSET = 'A-Za-z0-9_-';
const CLASSIFY = 'fence: packages/mcp/src/fence/fence-adapter.ts (classify)';

/** The card of one fenced tool, from what the fence file declares; the rest is `unknown` and listed as unverified. */
export function fenceCard(config: Pick<FenceConfig, 'name' | 'policy'>, toolName: string, t: FenceToolConfig) {
  const declared = (what: string) => `fence file: tools.${toolName}.${what}${t.source ? ` (${t.source})` : ''}`;
  const unverified: { field: string; condition: string; source: string }[] = [];
  const maybe = (field: string, value: unknown, what: string, source = declared(what)) => {
    if (value !== undefined) return fact(value, source);
    const reason = `not declared in the fence file (tools.${toolName}.${what})`;
    unverified.push({ field, condition: `${what} is not declared for this upstream tool`, source: reason });
    return fact('unknown', reason);
  };
  const noKey = (value: unknown) => fact(value, 'no key travels');
  const { key: k, lookup: l } = t;
  const keySource = k?.source ?? t.source;
  const limits = config.policy ?? {};
  const key = k
    ? {
        providerKey: {
          travels: fact('body', declared('key.argument')),
          name: fact(k.argument, declared('key.argument')),
          maxLength: fact(k.maxLength ?? 64, k.maxLength ? declared('key.maxLength') : 'fence default: 64 characters'),
          charset: fact(KEY_CHARSET, 'fence: keys are letters, digits, _ and -'),
          scope: fact('one upstream server', declared('key')),
        },
        keyReuse: fact('same call while the upstream keeps the key', declared('key')),
        parameterMatching: maybe('parameterMatching', k.parameterMatching, 'key.parameterMatching', keySource),
        semantics: maybe('storedResult.semantics', k.semantics, 'key.semantics', keySource),
        retention: maybe('retention.minimum', k.retention, 'key.retention', keySource),
        concurrency: maybe('concurrency', k.concurrency, 'key.concurrency', keySource),
      }
    : {
        providerKey: {
          travels: fact('none', `fence file: tools.${toolName} declares no key argument`),
          name: noKey(null),
          maxLength: noKey(null),
          charset: noKey(null),
          scope: noKey('n/a: no key travels'),
        },
        keyReuse: noKey('never: no key travels'),
        parameterMatching: noKey('none'),
        semantics: fact('none', 'no key travels: the upstream cannot fold a re-sent call'),
        retention: fact(null, 'no key travels: nothing is stored'),
        concurrency: fact('duplicates', 'no key travels: concurrent calls each run the tool'),
      };
  const lookupSource = l?.source ?? t.source;
  const lookup = l
    ? {
        method: fact('search', declared('lookup.tool')),
        consistencyDelay: maybe('lookup.consistencyDelay', l.consistencyDelay, 'lookup.consistencyDelay', lookupSource),
        // How long the upstream may still apply a call after the fence gave up on it: unknown unless declared.
        lateApplyBound: maybe('lookup.lateApplyBound', l.lateApplyBound, 'lookup.lateApplyBound', lookupSource),
      }
    : {
        method: fact('none', `fence file: tools.${toolName} declares no lookup`),
        consistencyDelay: fact(null, 'no lookup'),
      };
  return defineCard({
    cardVersion: 1,
    provider: config.name,
    operation: `${config.name}.${toolName}`,
    sideEffect: {
      kind: fact(t.kind, declared('kind')),
      idempotentByNature: fact(
        t.idempotentByNature ?? false,
        t.idempotentByNature === undefined
          ? `default: a fenced ${t.kind} tool is not idempotent by nature`
          : declared('idempotentByNature'),
      ),
    },
    businessOperationId: {
      rule: `derived from intent fields ${t.intent.join(', ')} of the tool's arguments`,
      intentFields: [...t.intent],
    },
    ids: {
      run: 'receipts only',
      attempt: 'receipts only',
      request: fact('the MCP JSON-RPC request id (not kept)', 'MCP specification: JSON-RPC request ids'),
    },
    providerKey: key.providerKey,
    keyReuse: key.keyReuse,
    parameterMatching: key.parameterMatching,
    storedResult: {
      semantics: key.semantics,
      includesErrors: fact(false, 'fence: an upstream tool error is never assumed to be stored'),
    },
    lookup,
    retention: { minimum: key.retention },
    concurrency: key.concurrency,
    retryableErrors: fact(
      ['a transport that never connected (not-applied)', 'a timeout or a closed connection (unknown: look up first)'],
      CLASSIFY,
    ),
    nonRetryableErrors: fact(
      [
        'invalid params (-32602)',
        'unknown tool (-32601)',
        ...(t.toolErrors === 'rejected' ? ['a tool error result'] : []),
        ...(t.rejectWhen ?? []).map((r) => `a tool error matching /${r}/`),
      ],
      CLASSIFY,
    ),
    backoff: {
      strategy: 'exponential-full-jitter',
      base: `${limits.baseMs ?? 200}ms`,
      cap: `${limits.capMs ?? 5000}ms`,
      retryAfterCap: '60s',
    },
    limits: {
      maxAttempts: limits.maxAttempts ?? 3,
      maxElapsed: `${limits.maxElapsedMs ?? 60_000}ms`,
      lookupWindow: `${limits.lookupWindowMs ?? 30_000}ms`,
    },
    retryLayer: {
      layer: 'runner',
      sdkRetries: 'disabled',
      how: 'the MCP client sends each tools/call once; the fence is the only layer that re-sends',
    },
    reconciler: l
      ? `the runner, through the upstream tool ${l.tool}`
      : 'the runner by same-key re-send when the card allows, else a person',
    handoff: {
      condition: 'rejected, budget exhausted, or unknown with no safe re-send',
      destination: "the fence's handoff sink and the ledger",
    },
    duplicateTest: 'retrysafe probe against the upstream, unwrapped and wrapped',
    receipts: 'the fence ledger; JSONL export',
    unverified,
  } as RetrySafetyCard);
}
