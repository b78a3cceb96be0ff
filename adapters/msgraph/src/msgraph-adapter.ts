import { type Client, ResponseType } from '@microsoft/microsoft-graph-client';
import {
  AdapterConfigurationError,
  type BusinessOperationId,
  defineAdapter,
  type FrameOperation,
  type LookupResult,
  type OperationSpec,
  type Outcome,
  type ProviderKey,
  type TypedAdapter,
} from '@retrysafe/contract';
import { operationParamsErrors } from '@retrysafe/contract/provider';
import { assertNoSdkRetries, createGraphClient, type TokenProvider, TransportProbe } from './msgraph-client.js';
import {
  cannotTellFromAnswer,
  cannotTellFromNetworkError,
  type GraphHttpAnswer,
  outcomeFromErrorAnswer,
  outcomeFromNetworkError,
  outcomeFromTokenError,
  refsOf,
} from './msgraph-errors.js';
import {
  type BuildContext,
  DEFAULT_APPLICATION_NAME,
  DEFAULT_EXTENDED_PROPERTY_ID,
  type GraphOperation,
  type MsGraphOperationTypes,
  msGraphOperations,
  TRANSACTION_ID_RULE,
} from './msgraph-operations.js';

export interface MsGraphAdapterOptions {
  /** Bearer token or a function returning one (called per request). Required unless `client` is given. */
  readonly accessToken?: TokenProvider;
  /** Graph root, default `https://graph.microsoft.com/`; the sandbox URL in tests. */
  readonly baseUrl?: string;
  /** API version, default `v1.0`. */
  readonly version?: string;
  /** Per-request timeout in ms (default 30 000). A timeout after sending is an unknown outcome. */
  readonly timeoutMs?: number;
  /**
   * A Graph client you built. Its middleware chain must not contain the SDK's RetryHandler
   * (refused with AdapterConfigurationError). Default: `createGraphClient({ token: accessToken, baseUrl })`.
   */
  readonly client?: Client;
  /** The single-value extended property carrying the business-operation id on messages and events. */
  readonly extendedPropertyId?: string;
  /** `applicationName` of the linkedResource tagging To Do tasks. */
  readonly applicationName?: string;
}

export interface MsGraphAdapter extends TypedAdapter<MsGraphOperationTypes> {
  readonly provider: 'msgraph';
  readonly operations: Readonly<Record<string, OperationSpec>>;
  /** The Graph client in use (no RetryHandler in its chain). */
  readonly client: Client;
}

const PROVIDER = 'msgraph';
const EXTENDED_PROPERTY_ID = /^String \{[0-9a-fA-F-]{36}\} Name [A-Za-z0-9_.-]+$/;

type Sent =
  | { kind: 'answer'; answer: GraphHttpAnswer }
  | { kind: 'no-answer'; error: unknown; stage: 'token' | 'transport' | undefined }
  | { kind: 'unreadable'; status: number; headers: Headers; error: unknown };

/**
 * Microsoft Graph adapter: `mail.send`, `events.create`, `todo.tasks.create`. Every attempt is
 * classified into one Outcome; SDK retries are off (the runner is the one retrying layer).
 */
export function createMsGraphAdapter(options: MsGraphAdapterOptions): MsGraphAdapter {
  const timeoutMs = options.timeoutMs ?? 30_000;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
    throw new AdapterConfigurationError(
      PROVIDER,
      `timeoutMs must be a positive number, got ${String(options.timeoutMs)}`,
    );
  const extendedPropertyId = options.extendedPropertyId ?? DEFAULT_EXTENDED_PROPERTY_ID;
  if (!EXTENDED_PROPERTY_ID.test(extendedPropertyId)) {
    throw new AdapterConfigurationError(
      PROVIDER,
      `extendedPropertyId must look like "String {GUID} Name someName", got ${JSON.stringify(extendedPropertyId)}`,
    );
  }
  const applicationName = options.applicationName ?? DEFAULT_APPLICATION_NAME;
  let client: Client;
  if (options.client) {
    if (options.accessToken !== undefined || options.baseUrl !== undefined) {
      throw new AdapterConfigurationError(
        PROVIDER,
        'pass either client, or accessToken/baseUrl to build one, not both',
      );
    }
    assertNoSdkRetries(options.client);
    client = options.client;
  } else {
    if (options.accessToken === undefined || options.accessToken === '') {
      throw new AdapterConfigurationError(
        PROVIDER,
        'accessToken (a token or a function returning one) is required when no client is given',
      );
    }
    client = createGraphClient({
      token: options.accessToken,
      ...(options.baseUrl !== undefined ? { baseUrl: options.baseUrl } : {}),
      ...(options.version !== undefined ? { version: options.version } : {}),
    });
  }

  function buildContext(id: BusinessOperationId, key: ProviderKey | null): BuildContext {
    return { businessOperationId: id, providerKey: key, extendedPropertyId, applicationName };
  }

  function signalFor(signal: AbortSignal | undefined): AbortSignal {
    const timeout = AbortSignal.timeout(timeoutMs);
    return signal ? AbortSignal.any([signal, timeout]) : timeout;
  }

  /** Sends through the SDK and returns the raw answer (RAW response type: non-2xx are answers, not throws). */
  async function send(request: (probe: TransportProbe) => Promise<unknown>): Promise<Sent> {
    const probe = new TransportProbe();
    let raw: Response;
    try {
      raw = (await request(probe)) as Response;
    } catch (error) {
      return { kind: 'no-answer', error: probe.error ?? error, stage: probe.stage };
    }
    let text: string;
    try {
      text = await raw.text();
    } catch (error) {
      return { kind: 'unreadable', status: raw.status, headers: raw.headers, error };
    }
    let body: unknown = null;
    if (text.length > 0) {
      try {
        body = JSON.parse(text);
      } catch {
        body = null;
      }
    }
    return { kind: 'answer', answer: { status: raw.status, headers: raw.headers, body } };
  }

  const operations: Record<string, GraphOperation & FrameOperation> = {};
  for (const [name, o] of Object.entries(msGraphOperations))
    operations[name] = { ...o, keyRule: o.card.providerKey.travels.value === 'none' ? null : TRANSACTION_ID_RULE };

  return defineAdapter(
    {
      provider: PROVIDER,
      operations,

      async execute(o, params, ctx): Promise<Outcome> {
        const req = o.build(params, buildContext(ctx.businessOperationId, ctx.providerKey));
        const sent = await send((probe) =>
          client
            .api(req.path)
            .responseType(ResponseType.RAW)
            .middlewareOptions([probe])
            .option('signal', signalFor(ctx.signal))
            .post(req.body),
        );
        if (sent.kind === 'no-answer')
          return sent.stage === 'token' ? outcomeFromTokenError(sent.error) : outcomeFromNetworkError(sent.error);
        if (sent.kind === 'unreadable') {
          // The status line arrived, the body did not: a 2xx is applied but its id was lost; any other status still classifies.
          const answer = { status: sent.status, headers: sent.headers, body: null };
          if (sent.status >= 200 && sent.status < 300) {
            return {
              kind: 'unknown',
              cause: 'truncated-response',
              message: `HTTP ${sent.status} whose body could not be read: applied, but its id was lost`,
              ...refsOf(answer),
            };
          }
          return outcomeFromErrorAnswer(answer, { conflictMayMeanApplied: o.conflictMayMeanApplied });
        }
        const { answer } = sent;
        if (answer.status >= 200 && answer.status < 300) {
          const { result, providerRef } = o.readSuccess(answer.status, answer.body);
          return { kind: 'succeeded', result, ...refsOf(answer), ...(providerRef ? { providerRef } : {}) };
        }
        return outcomeFromErrorAnswer(answer, { conflictMayMeanApplied: o.conflictMayMeanApplied });
      },

      async lookup(o, ctx): Promise<LookupResult> {
        const what = `${o.name} lookup`;
        if (operationParamsErrors(o, ctx.params).length > 0) {
          return {
            kind: 'cannot-tell',
            reason: `${what}: the recorded params are not valid for this operation, so there is nothing to search by`,
          };
        }
        const q = o.lookup(ctx.params, buildContext(ctx.businessOperationId, ctx.providerKey));
        const sent = await send((probe) =>
          client
            .api(q.path)
            .filter(q.filter)
            .select([...q.select])
            .top(5)
            .responseType(ResponseType.RAW)
            .middlewareOptions([probe])
            .option('signal', signalFor(ctx.signal))
            .get(),
        );
        if (sent.kind === 'no-answer') return cannotTellFromNetworkError(sent.error, what, sent.stage);
        if (sent.kind === 'unreadable')
          return { kind: 'cannot-tell', reason: `${what}: HTTP ${sent.status} whose body could not be read` };
        const { answer } = sent;
        if (answer.status !== 200) return cannotTellFromAnswer(answer, what);
        const items = (answer.body as { value?: unknown } | null)?.value;
        if (!Array.isArray(items))
          return { kind: 'cannot-tell', reason: `${what}: HTTP 200 without a value array`, ...refsOf(answer) };
        const first = items.find((i): i is Record<string, unknown> => typeof i === 'object' && i !== null);
        if (!first) {
          return {
            kind: 'cannot-tell',
            reason: `${what}: nothing tagged with this business-operation id is visible yet; Graph documents no bound on that delay, so absence does not prove it was not applied`,
            ...refsOf(answer),
          };
        }
        const { result, providerRef } = o.readFound(first);
        const matches = items.length;
        return {
          kind: 'found',
          outcome: {
            kind: 'succeeded',
            result: matches > 1 ? { ...(result as object), matches } : result,
            ...refsOf(answer),
            ...(providerRef ? { providerRef } : {}),
          },
        };
      },

      // close: the Graph client holds no sockets of its own (global fetch); nothing to release.
    },
    { client },
  );
}
