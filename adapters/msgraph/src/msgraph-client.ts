import {
  Client,
  type Context,
  HTTPMessageHandler,
  type Middleware,
  type MiddlewareOptions,
  RetryHandler,
} from '@microsoft/microsoft-graph-client';
import { AdapterConfigurationError } from '@retrysafe/contract';
import { checkBaseUrl } from '@retrysafe/contract/provider';

/** A bearer token, or a function that returns one (called once per request, so it may refresh). */
export type TokenProvider = string | (() => string | Promise<string>);

/** The raw transport error of one request: the SDK's GraphError -1 drops the cause that decides not-applied vs unknown. */
export class TransportProbe implements MiddlewareOptions {
  error: unknown = undefined;
  /** Where it failed: getting the token (nothing was sent) or on the wire. */
  stage: 'token' | 'transport' | undefined = undefined;
}

/** Records where a request failed in its probe; returns the error to rethrow untouched. */
function failed(probe: TransportProbe | undefined, stage: 'token' | 'transport', error: unknown): unknown {
  if (probe) Object.assign(probe, { error, stage });
  return error;
}

/** Adds the bearer token also on loopback http (the SDK's AuthenticationHandler strips it there); records failures in the probe. */
export class BearerAuthMiddleware implements Middleware {
  private next: Middleware | undefined;
  constructor(private readonly token: TokenProvider) {}

  async execute(context: Context): Promise<void> {
    const probe = context.middlewareControl?.getMiddlewareOptions(TransportProbe) as TransportProbe | undefined;
    let token: string;
    try {
      token = typeof this.token === 'function' ? await this.token() : this.token;
      if (typeof token !== 'string' || token === '') throw new Error('the token provider returned no token');
      // The token never travels in clear: the base-URL rule also on absolute URLs the SDK follows (@odata.nextLink).
      const { request } = context;
      checkBaseUrl('msgraph', typeof request === 'string' ? request : request.url, 'the request URL');
    } catch (error) {
      throw failed(probe, 'token', error);
    }
    const headers = { ...(context.options?.headers as Record<string, string>), Authorization: `Bearer ${token}` };
    context.options = { ...context.options, headers };
    if (!this.next) throw new Error('BearerAuthMiddleware must not be the last middleware');
    try {
      await this.next.execute(context);
    } catch (error) {
      throw failed(probe, 'transport', error);
    }
  }

  setNext(next: Middleware): void {
    this.next = next;
  }
}

export interface GraphClientOptions {
  readonly token: TokenProvider;
  /** Default `https://graph.microsoft.com/`; a loopback sandbox URL in tests. */
  readonly baseUrl?: string;
  /** Default `v1.0`. */
  readonly version?: string;
}

/** The Graph client with no RetryHandler: the SDK's default chain retries 429/503/504 on POST, resending mail. */
export function createGraphClient(options: GraphClientOptions): Client {
  const baseUrl = options.baseUrl ?? 'https://graph.microsoft.com/';
  checkBaseUrl('msgraph', baseUrl);
  return Client.initWithMiddleware({
    middleware: [new BearerAuthMiddleware(options.token), new HTTPMessageHandler()],
    baseUrl,
    defaultVersion: options.version ?? 'v1.0',
  });
}

/** The middleware objects of a client's chain, first to last (reads the SDK's internal links). */
export function middlewareChain(client: Client): unknown[] {
  const chain: unknown[] = [];
  let node = (client as unknown as { httpClient?: { middleware?: unknown } }).httpClient?.middleware;
  while (node && typeof node === 'object' && !chain.includes(node)) {
    chain.push(node);
    const n = node as Record<string, unknown>;
    node = n.nextMiddleware ?? n.next;
  }
  return chain;
}

/** The SDK's RetryHandler, also from another copy of the SDK (another version, a bundle), where instanceof fails. */
function isRetryHandler(m: unknown): boolean {
  const r = m as { isRetry?: unknown; executeWithRetry?: unknown };
  return m instanceof RetryHandler || (typeof r.isRetry === 'function' && typeof r.executeWithRetry === 'function');
}

/** With the SDK's RetryHandler a 503/504 on sendMail is resent by the SDK: the runner must be the one retrying layer. */
export function assertNoSdkRetries(client: Client): void {
  const chain = middlewareChain(client);
  if (chain.length === 0)
    throw new AdapterConfigurationError(
      'msgraph',
      'cannot inspect the injected client middleware chain; build it with createGraphClient() or Client.initWithMiddleware({ middleware: [...] })',
    );
  if (chain.some(isRetryHandler))
    throw new AdapterConfigurationError(
      'msgraph',
      'the injected Graph client has the SDK RetryHandler in its middleware chain (it resends POST /sendMail on 429/503/504); build it without one, e.g. createGraphClient({ token, baseUrl })',
    );
}
