import { isPlainObject, type PatternSandbox, type SandboxReply, sandboxClock, startPatternSandbox } from './server.js';

/**
 * Conditional idempotency in the style of Google Cloud Storage preconditions, on `/documents/{id}`:
 * - `GET` returns the document with its validator: `ETag: "g<generation>"` and a `generation` field;
 * - `PUT` with `If-Match: <etag>` (or `?ifGenerationMatch=<n>`) writes only when the validator still
 *   matches, then bumps the generation; a mismatch is 412 `conditionNotMet`; no precondition at all is
 *   428 (this server accepts only conditional writes, so a blind re-send cannot happen).
 */
export interface EtagSandboxOptions {
  readonly port?: number;
  /** Documents present at start. Default `{ 'doc-1': { title: 'Draft', body: '' } }`. */
  readonly documents?: Readonly<Record<string, { title: string; body: string }>>;
}

export interface SandboxDocument {
  readonly id: string;
  readonly title: string;
  readonly body: string;
  readonly generation: number;
}

/** Counts conditional writes applied (`writes`, or the operation name `documents.update`). */
export interface EtagSandbox extends PatternSandbox<SandboxDocument> {
  /** The current ETag of a document. */
  etag(id: string): string;
  /** Another writer changes the document (bumps its generation). */
  writeAsOther(id: string, patch: { title?: string; body?: string }): void;
}

const etagOf = (d: SandboxDocument) => `"g${d.generation}"`;
const err = (status: number, code: string): SandboxReply => ({ status, body: { error: { code, message: code } } });

export async function startEtagSandbox(options: EtagSandboxOptions = {}): Promise<EtagSandbox> {
  const docs = new Map<string, SandboxDocument>();
  for (const [id, d] of Object.entries(options.documents ?? { 'doc-1': { title: 'Draft', body: '' } }))
    docs.set(id, { id, ...d, generation: 1 });
  let writes = 0;

  const sandbox = await startPatternSandbox({
    port: options.port,
    clock: sandboxClock(),
    requestId: ['x-guploader-uploadid', 'up_'],
    kinds: ['writes', 'documents.update'],
    count: () => writes,
    records: () => [...docs.values()],
    handle: (req) => {
      const m = /^\/documents\/([^/]+)$/.exec(req.path);
      if (!m) return err(404, 'notFound');
      const id = decodeURIComponent(m[1]!);
      const doc = docs.get(id);
      if (req.method === 'GET')
        return doc ? { status: 200, headers: { etag: etagOf(doc) }, body: doc } : err(404, 'notFound');
      if (req.method !== 'PUT') return err(405, 'methodNotAllowed');
      if (!doc) return err(404, 'notFound');
      const body = req.body;
      if (!isPlainObject(body) || typeof body.title !== 'string' || typeof body.body !== 'string')
        return err(400, 'invalid');
      const ifMatch = req.headers['if-match'];
      const ifGen = req.query.get('ifGenerationMatch');
      if (typeof ifMatch !== 'string' && ifGen === null) return err(428, 'preconditionRequired');
      const holds = typeof ifMatch === 'string' ? ifMatch === etagOf(doc) : ifGen === String(doc.generation);
      if (!holds) return err(412, 'conditionNotMet');
      const next: SandboxDocument = { id, title: body.title, body: body.body, generation: doc.generation + 1 };
      docs.set(id, next);
      writes++;
      return { status: 200, headers: { etag: etagOf(next) }, body: next };
    },
  });
  return {
    ...sandbox,
    etag: (id) => {
      const d = docs.get(id);
      if (!d) throw new Error(`no document ${id}`);
      return etagOf(d);
    },
    writeAsOther: (id, patch) => {
      const d = docs.get(id);
      if (!d) throw new Error(`no document ${id}`);
      docs.set(id, { ...d, ...patch, generation: d.generation + 1 });
    },
  };
}
