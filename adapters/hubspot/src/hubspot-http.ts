import * as contactsSdk from '@hubspot/api-client/lib/codegen/crm/contacts/index.js';
import * as objectsSdk from '@hubspot/api-client/lib/codegen/crm/objects/index.js';
import * as ticketsSdk from '@hubspot/api-client/lib/codegen/crm/tickets/index.js';

/**
 * Why the adapter does not use `new Client()` from @hubspot/api-client 14.0.1:
 *
 * - `Client` stores its decorators (retry, limiter) in a process-wide singleton
 *   (lib/src/services/ApiDecoratorService.js `getInstance()`); every `new Client()` replaces them
 *   (lib/src/client.js `init()` → `setDecorators`).
 * - The decorators are applied to an API object when its discovery is first read
 *   (lib/src/discovery/crm/tickets/TicketsDiscovery.js: `ApiDecoratorService.getInstance().apply(new BasicApi(...))`),
 *   and `client.apiRequest()` applies them on every call. So a client built with
 *   `numberOfApiCallRetries: 0` gets whatever retry decorator the LAST `new Client()` in the
 *   process installed, if it touches `client.crm.tickets` after that.
 * - The RetryDecorator (lib/src/services/decorators/RetryDecorator.js) re-sends POST creates on 5xx
 *   (200 ms · n) and on 429 TEN_SECONDLY_ROLLING / "secondly limit" — a second retrying layer.
 *
 * So the adapter builds the SDK's own generated API classes (lib/codegen/crm/*: request factories,
 * serializers, response processors, ApiException) with its own configuration. Nothing in that path
 * reads the decorator singleton, and building them does not write it either, so other clients in
 * the process keep their settings. The transport is the adapter's (the SDK's fetch transport has no
 * timeout and no abort): one fetch per call, with a timeout, and a record of what came back.
 * The SDK also ignores a per-call `httpApi` option when sending (ObservableAPI uses
 * `this.configuration.httpApi`), which is why the API objects are built per call.
 */

/** What one SDK call put on and got back from the wire. */
export interface WireRecord {
  /** fetch was called: from here on the request may have reached HubSpot. */
  started: boolean;
  status?: number;
  /** Lower-case header names. */
  headers?: Record<string, string>;
  bodyText?: string;
  /** Reading the body failed after the status line arrived. */
  bodyError?: unknown;
}

export interface CallSettings {
  readonly baseUrl: string;
  readonly accessToken: string;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal | undefined;
}

/** Thrown by the transport when the caller's signal was aborted before anything was sent. */
export class NotSentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotSentError';
  }
}

interface RequestLike {
  getUrl(): string;
  getHttpMethod(): string;
  getHeaders(): { [key: string]: string };
  getBody(): unknown;
}

interface ResponseBody {
  text(): Promise<string>;
  binary(): Promise<Buffer>;
}

function transport(wire: WireRecord, settings: CallSettings) {
  return async (
    request: RequestLike,
  ): Promise<{ status: number; headers: Record<string, string>; body: ResponseBody }> => {
    if (settings.signal?.aborted) throw new NotSentError('aborted by the caller before the request was sent');
    const timeout = AbortSignal.timeout(settings.timeoutMs);
    const signal = settings.signal ? AbortSignal.any([settings.signal, timeout]) : timeout;
    const body = request.getBody();
    wire.started = true;
    const res = await fetch(request.getUrl(), {
      method: request.getHttpMethod(),
      headers: request.getHeaders(),
      ...(body === undefined ? {} : { body: body as string }),
      signal,
    });
    const headers: Record<string, string> = {};
    res.headers.forEach((value, name) => {
      headers[name.toLowerCase()] = value;
    });
    wire.status = res.status;
    wire.headers = headers;
    let buf: Buffer;
    try {
      buf = Buffer.from(await res.arrayBuffer());
    } catch (err) {
      wire.bodyError = err;
      throw err;
    }
    wire.bodyText = buf.toString('utf8');
    return { status: res.status, headers, body: { text: async () => buf.toString('utf8'), binary: async () => buf } };
  };
}

/** The parts of one generated SDK package the adapter uses to build a configuration. */
interface SdkPackage<C> {
  createConfiguration(conf: {
    baseServer: unknown;
    httpApi: unknown;
    authMethods: { oauth2: { accessToken: string } };
  }): C;
  ServerConfiguration: new (url: string, variables: {}) => unknown;
  wrapHttpLibrary(lib: { send(request: RequestLike): Promise<unknown> }): unknown;
  ResponseContext: new (status: number, headers: { [key: string]: string }, body: ResponseBody) => unknown;
}

function configuration<C>(sdk: SdkPackage<C>, wire: WireRecord, settings: CallSettings): C {
  const send = transport(wire, settings);
  return sdk.createConfiguration({
    baseServer: new sdk.ServerConfiguration(settings.baseUrl, {}),
    authMethods: { oauth2: { accessToken: settings.accessToken } },
    httpApi: sdk.wrapHttpLibrary({
      send: async (request) => {
        const r = await send(request);
        return new sdk.ResponseContext(r.status, r.headers, r.body);
      },
    }),
  });
}

/** Fresh, undecorated generated API objects for one call, bound to one wire record. */
export function contactsApi(settings: CallSettings, wire: WireRecord) {
  const config = configuration(contactsSdk as unknown as SdkPackage<contactsSdk.Configuration>, wire, settings);
  return { basic: new contactsSdk.BasicApi(config) };
}

export function objectsApi(settings: CallSettings, wire: WireRecord) {
  const config = configuration(objectsSdk as unknown as SdkPackage<objectsSdk.Configuration>, wire, settings);
  return { batch: new objectsSdk.BatchApi(config), search: new objectsSdk.SearchApi(config) };
}

export function ticketsApi(settings: CallSettings, wire: WireRecord) {
  const config = configuration(ticketsSdk as unknown as SdkPackage<ticketsSdk.Configuration>, wire, settings);
  return { basic: new ticketsSdk.BasicApi(config), search: new ticketsSdk.SearchApi(config) };
}

export const FilterOperator = ticketsSdk.FilterOperatorEnum;
