import * as contactsSdk from '@hubspot/api-client/lib/codegen/crm/contacts/index.js';
import * as objectsSdk from '@hubspot/api-client/lib/codegen/crm/objects/index.js';
import * as ticketsSdk from '@hubspot/api-client/lib/codegen/crm/tickets/index.js';

// Not `new Client()`: its retry decorator, a process-wide singleton, re-sends POST creates on 5xx and 429. The
// generated API classes never read it; they are built per call (the SDK ignores a per-call `httpApi`) on our fetch.

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
  readonly signal: AbortSignal;
}

// One generated package's request type stands for all three (they are generated alike).
type RequestLike = objectsSdk.RequestContext;

/** The parts of one generated SDK package the adapter uses to build a configuration. */
interface SdkPackage<C> {
  createConfiguration(conf: {
    baseServer: unknown;
    httpApi: unknown;
    authMethods: { oauth2: { accessToken: string } };
  }): C;
  ServerConfiguration: new (url: string, variables: object) => unknown;
  wrapHttpLibrary(lib: { send(request: RequestLike): Promise<unknown> }): unknown;
  ResponseContext: new (status: number, headers: { [key: string]: string }, body: objectsSdk.ResponseBody) => unknown;
}

/** A configuration whose transport is our fetch: timeout, abort, and a record of what came back in `wire`. */
function configuration<C>(sdk: SdkPackage<C>, wire: WireRecord, settings: CallSettings): C {
  const send = async (request: RequestLike) => {
    const timeout = AbortSignal.timeout(settings.timeoutMs);
    const body = request.getBody();
    wire.started = true;
    const res = await fetch(request.getUrl(), {
      method: request.getHttpMethod(),
      headers: request.getHeaders(),
      ...(body === undefined ? {} : { body: body as string }),
      signal: AbortSignal.any([settings.signal, timeout]),
    });
    wire.status = res.status;
    wire.headers = Object.fromEntries(res.headers); // fetch lower-cases the names
    let buf: Buffer;
    try {
      buf = Buffer.from(await res.arrayBuffer());
    } catch (err) {
      wire.bodyError = err;
      throw err;
    }
    wire.bodyText = buf.toString('utf8');
    const text = async () => buf.toString('utf8');
    return new sdk.ResponseContext(res.status, wire.headers, { text, binary: async () => buf });
  };
  return sdk.createConfiguration({
    baseServer: new sdk.ServerConfiguration(settings.baseUrl, {}),
    authMethods: { oauth2: { accessToken: settings.accessToken } },
    httpApi: sdk.wrapHttpLibrary({ send }),
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
  return { basic: new ticketsSdk.BasicApi(config) };
}

export const FilterOperator = ticketsSdk.FilterOperatorEnum;
