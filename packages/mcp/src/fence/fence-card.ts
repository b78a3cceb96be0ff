// A fenced tool's retry safety card: what the fence file declares, the rest unknown and listed as unverified.
import { CardValidationError, defineCard, fact, type RetrySafetyCard } from '@retrysafe/contract';
import { type FenceConfig, FenceConfigError, type FenceToolConfig } from './fence-config.js';

export const KEY_CHARSET = 'A-Za-z0-9_-';

/** `make()`; the card problems it throws (CardValidationError) named by the fence file's paths of `toolName`. */
export function named<T>(toolName: string, make: () => T): T {
  try {
    return make();
  } catch (e) {
    if (!CardValidationError.isInstance(e)) throw e;
    const where = (path: string) => {
      const [card, key] = Object.entries(FENCE_KEYS).find(([card]) => path.startsWith(card)) ?? [];
      return card ? `tools.${toolName}.${key}${path.slice(card.length)}` : `tools.${toolName} (card ${path})`;
    };
    throw new FenceConfigError(e.problems.map((p) => `${where(p.path)}: ${p.message}`).join('; '));
  }
}
/** The card paths a fence file declares as they are, by its key. */
const FENCE_KEYS = {
  'businessOperationId.optionalIntentFields': 'optionalIntent',
  'businessOperationId.normalize': 'normalize',
  paramComparison: 'paramComparison',
};
const CLASSIFY = 'fence: packages/mcp/src/fence/fence-adapter.ts (classify)';
const MCP_ERRORS = 'https://modelcontextprotocol.io/specification/2025-06-18/server/tools#error-handling';
const MCP_AUTH_ERRORS = 'https://modelcontextprotocol.io/specification/2025-06-18/basic/authorization#error-handling';
/** A 429 refuses the request for its rate: the upstream did not take it in. */
const HTTP_429 = 'https://www.rfc-editor.org/rfc/rfc6585#section-4';

/** How a fenced tool's facts are sourced: `declared` names its fence file key, `maybe` a fact the file may leave out
 * (then `unknown`, and listed in `unverified`). */
function factsOf(toolName: string, t: FenceToolConfig) {
  const declared = (what: string) => `fence file: tools.${toolName}.${what}${t.source ? ` (${t.source})` : ''}`;
  const unverified: { field: string; condition: string; source: string }[] = [];
  const maybe = (field: string, value: unknown, what: string) => {
    const source = (what.startsWith('key.') ? t.key?.source : t.lookup?.source) ?? t.source ?? declared(what);
    if (value !== undefined) return fact(value, source);
    const reason = `not declared in the fence file (tools.${toolName}.${what})`;
    unverified.push({ field, condition: `${what} is not declared for this upstream tool`, source: reason });
    return fact('unknown', reason);
  };
  return { declared, maybe, unverified };
}
type Facts = ReturnType<typeof factsOf>;

/** The card's key facts: what the fence file declares of its key argument, or none travels. */
function keyFacts(toolName: string, t: FenceToolConfig, { declared, maybe, unverified }: Facts) {
  const k = t.key;
  if (!k) {
    const noKey = (value: unknown) => fact(value, 'no key travels');
    return {
      providerKey: {
        travels: fact('none', `fence file: tools.${toolName} declares no key argument`),
        name: noKey(null),
        maxLength: noKey(null),
        charset: noKey(null),
        scope: noKey('n/a: no key travels'),
      },
      keyReuse: noKey('never: no key travels'),
      parameterMatching: noKey('none'),
      storedResult: {
        semantics: fact('none', 'no key travels: the upstream cannot fold a re-sent call'),
        includesErrors: fact(false, 'fence: an upstream tool error is never assumed to be stored'),
      },
      retention: { minimum: fact(null, 'no key travels: nothing is stored') },
      concurrency: fact('duplicates', 'no key travels: concurrent calls each run the tool'),
    };
  }
  // An upstream may keep an error under the key and give it back to the same key with other arguments: a corrected
  // call after a rejection then goes out under a key of its own rather than be answered with the old error.
  const keptErrors = () => {
    const condition = 'whether the upstream keeps an error answer under the key and gives it back';
    unverified.push({ field: 'storedResult.includesErrors', condition, source: declared('key') });
    return fact<boolean>('unknown', `${declared('key')}: the fence file does not say what the upstream keeps`);
  };
  return {
    providerKey: {
      travels: fact('body', declared('key.argument')),
      name: fact(k.argument, declared('key.argument')),
      maxLength: fact(k.maxLength ?? 64, k.maxLength ? declared('key.maxLength') : 'fence default: 64 characters'),
      charset: fact(KEY_CHARSET, 'fence: keys are letters, digits, _ and -'),
      scope: fact('one upstream server', declared('key')),
    },
    keyReuse: fact('same call while the upstream keeps the key', declared('key')),
    parameterMatching: maybe('parameterMatching', k.parameterMatching, 'key.parameterMatching'),
    storedResult: {
      semantics: maybe('storedResult.semantics', k.semantics, 'key.semantics'),
      includesErrors: keptErrors(),
    },
    retention: { minimum: maybe('retention.minimum', k.retention, 'key.retention') },
    concurrency: maybe('concurrency', k.concurrency, 'key.concurrency'),
  };
}

/** The card's lookup: the fence file's lookup tool, or none. */
function lookupFacts(toolName: string, l: FenceToolConfig['lookup'], { declared, maybe }: Facts) {
  if (!l)
    return {
      method: fact('none', `fence file: tools.${toolName} declares no lookup`),
      consistencyDelay: fact(null, 'no lookup'),
    };
  const delay = [0, '0'].includes(l.consistencyDelay as never) ? null : l.consistencyDelay;
  return {
    method: fact('search', declared('lookup.tool')),
    consistencyDelay: maybe('lookup.consistencyDelay', delay, 'lookup.consistencyDelay'),
    // How long the upstream may still apply a call after the fence gave up on it: unknown unless declared.
    lateApplyBound: maybe('lookup.lateApplyBound', l.lateApplyBound, 'lookup.lateApplyBound'),
  };
}

/** The tool's card: what the fence file declares, the rest `unknown` and listed as unverified. */
export function toolCard(config: Pick<FenceConfig, 'name' | 'policy'>, toolName: string, t: FenceToolConfig) {
  const facts = factsOf(toolName, t);
  const { declared, unverified } = facts;
  const limits = config.policy ?? {};
  // MCP says nothing of what a tool did before it answered isError: the fence rejects a tool error only where the
  // fence file says such errors mean not applied. Its other rejections are protocol errors, raised before the tool runs.
  const protocolErrors = 'a protocol error (-32601, -32602) is an issue with the request itself';
  const rejecting = t.toolErrors === 'rejected' ? 'toolErrors' : t.rejectWhen?.length ? 'rejectWhen' : null;
  const toolErrors = rejecting
    ? `${declared(rejecting)}: these tool errors mean not applied`
    : "a tool error (isError) is never a rejection here (looked up instead), but for the MCP SDK's own refusals before the tool runs (their exact texts under nonRetryableErrors)";
  const keyFields = keyFacts(toolName, t, facts);
  const lookup = lookupFacts(toolName, t.lookup, facts);
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
      rejectionMayCreate: fact(false, `${MCP_ERRORS}: ${protocolErrors}; ${toolErrors}`),
    },
    businessOperationId: {
      rule: `derived from intent fields ${t.intent.join(', ')} of the tool's arguments`,
      intentFields: [...t.intent],
      ...(t.optionalIntent ? { optionalIntentFields: [...t.optionalIntent] } : {}),
      ...(t.normalize ? { normalize: t.normalize } : {}),
    },
    ...(t.paramComparison ? { paramComparison: t.paramComparison } : {}),
    ids: {
      run: 'receipts only',
      attempt: 'receipts only',
      request: fact('the MCP JSON-RPC request id (not kept)', 'MCP specification: JSON-RPC request ids'),
    },
    ...keyFields,
    lookup,
    retryableErrors: fact(
      [
        'a transport that never connected (not-applied)',
        'HTTP 429 to the call (not-applied: sent again after its Retry-After, within the cap)',
        'a timeout or a closed connection (unknown: look up first)',
        ...(t.key?.inProgressWhen ?? []).map((r) => `an error matching /${r}/ (in-progress under the key)`),
      ],
      `${CLASSIFY}; ${HTTP_429}`,
    ),
    nonRetryableErrors: fact(
      [
        'invalid params (-32602)',
        `the MCP SDK's refusals before the tool runs, answered as a tool error in exactly these words: "MCP error -32602: Tool ${toolName} not found", "… Tool ${toolName} disabled", "… Invalid arguments for tool ${toolName}: arguments contain more than the maximum of <n> elements", "… Input validation error: Invalid arguments for tool ${toolName}: <why>"`,
        'unknown tool (-32601)',
        ...(t.toolErrors === 'rejected' ? ['a tool error result'] : []),
        ...(t.rejectWhen ?? []).map((r) => `a tool error matching /${r}/`),
        ...(t.key?.conflictWhen ?? []).map((r) => `an error matching /${r}/ (conflict: the key holds another request)`),
        'HTTP 401 / 403 to the call (an HTTP upstream refused the token or its scope)',
      ],
      `${CLASSIFY}; ${MCP_AUTH_ERRORS}`,
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
    reconciler: t.lookup
      ? `the runner, through the upstream tool ${t.lookup.tool}`
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
