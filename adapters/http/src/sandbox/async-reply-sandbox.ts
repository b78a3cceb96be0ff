import {
  filtered,
  isPlainObject,
  type KeyedSandbox,
  keyedState,
  listPage,
  type SandboxReply,
  type SandboxRequestView,
} from './server.js';

/**
 * The Asynchronous Request-Reply pattern (Azure Architecture Center) for `POST /exports`:
 * - the request is validated first (400), then accepted: 202 + `Location` (status URL) + `Retry-After`;
 * - `GET /exports/status/{id}`: 200 with progress while pending; 303 See Other to `/exports/{id}` when
 *   done; a failed job's error is persisted at the status URL (422, every time it is read);
 * - `DELETE /exports/status/{id}` cancels a pending job;
 * - `GET /exports?clientRequestId=…` lists jobs (with their status URLs) by the client's request id;
 * - with an `Idempotency-Key`, a duplicate gets 202 and the EXISTING status URL: never a second work item;
 *   the same key with another payload is 422; a missing key is 400.
 */
export interface AsyncReplySandboxOptions {
  readonly port?: number;
  /** Time source for key expiry (e.g. the drill's virtual clock). Default: the wall clock. */
  readonly clock?: { now(): number };
  /** Status reads answered "running" before a job completes. Default 1. */
  readonly pollsUntilDone?: number;
  /** Retry-After (seconds) on the 202 and on pending status reads. Default 1. */
  readonly retryAfterS?: number;
  /** How long keys are kept. Default 24 h. */
  readonly retentionMs?: number;
  /** Jobs per page of `GET /exports`; a page with more after it carries `Link: <…>; rel="next"` (RFC 8288). Default: one page. */
  readonly pageSize?: number;
}

export interface SandboxExportJob {
  readonly id: string;
  readonly dataset: string;
  readonly format: string;
  readonly clientRequestId: string | null;
  readonly state: 'running' | 'succeeded' | 'failed' | 'cancelled';
}

/** Counts work items enqueued (`exports`, or the operation name `exports.create`). */
export type AsyncReplySandbox = KeyedSandbox<SandboxExportJob>;

const ASYNC_CODES = {
  invalid: 'InvalidRequest',
  keyMissing: 'IdempotencyKeyMissing',
  keyReused: 'IdempotencyKeyReused',
  failed: 'ExportFailed',
  notFound: 'NotFound',
} as const;

interface Job {
  id: string;
  dataset: string;
  format: string;
  clientRequestId: string | null;
  state: SandboxExportJob['state'];
  pollsLeft: number;
}

const err = (status: number, code: string): SandboxReply => ({ status, body: { error: { code, message: code } } });

export async function startAsyncReplySandbox(options: AsyncReplySandboxOptions = {}): Promise<AsyncReplySandbox> {
  const retryAfter = String(options.retryAfterS ?? 1);
  const jobs: Job[] = [];
  // A duplicate is answered with the EXISTING job's status resource as it is now, not a stored copy.
  const { run, start } = keyedState(options, {
    mismatch: err(422, ASYNC_CODES.keyReused),
    replay: (entry) => accepted(jobs.find((j) => j.id === (entry.reply!.body as { id: string }).id)!),
  });

  const accepted = (job: Job): SandboxReply => ({
    status: 202,
    headers: { location: `/exports/status/${job.id}`, 'retry-after': retryAfter },
    body: { id: job.id, status: job.state },
  });

  const handle = async (req: SandboxRequestView): Promise<SandboxReply> => {
    if (req.method === 'POST' && req.path === '/exports') {
      const body = req.body;
      if (
        !isPlainObject(body) ||
        typeof body.dataset !== 'string' ||
        body.dataset.length === 0 ||
        (body.format !== 'csv' && body.format !== 'json')
      ) {
        return err(400, ASYNC_CODES.invalid);
      }
      const key = req.headers['idempotency-key'];
      if (typeof key !== 'string' || key.length === 0) return err(400, ASYNC_CODES.keyMissing);
      const { dataset, format } = body;
      return run(key, body, () => {
        const clientRequestId = typeof body.clientRequestId === 'string' ? body.clientRequestId : null;
        const job: Job = {
          id: `exp_${jobs.length + 1}`,
          dataset,
          format,
          clientRequestId,
          state: 'running',
          pollsLeft: options.pollsUntilDone ?? 1,
        };
        jobs.push(job);
        return accepted(job);
      });
    }
    if (req.method === 'GET' && req.path === '/exports') {
      const data = filtered(req, 'clientRequestId', jobs, 'clientRequestId').map((j) => ({
        id: j.id,
        clientRequestId: j.clientRequestId,
        status: j.state,
        statusUrl: `/exports/status/${j.id}`,
      }));
      return listPage(req, data, options.pageSize);
    }
    const status = /^\/exports\/status\/([^/]+)$/.exec(req.path);
    if (status) {
      const job = jobs.find((j) => j.id === decodeURIComponent(status[1]!));
      if (!job) return err(404, ASYNC_CODES.notFound);
      if (req.method === 'DELETE') {
        if (job.state === 'running') job.state = 'cancelled';
        return { status: 200, body: { id: job.id, status: job.state } };
      }
      if (req.method !== 'GET') return err(405, 'MethodNotAllowed');
      if (job.state === 'running') {
        if (job.pollsLeft > 0) {
          job.pollsLeft--;
          return {
            status: 200,
            headers: { 'retry-after': retryAfter },
            body: { id: job.id, status: 'running', percentComplete: 50 },
          };
        }
        job.state = job.dataset.startsWith('broken-') ? 'failed' : 'succeeded';
      }
      if (job.state === 'failed') return err(422, ASYNC_CODES.failed); // persisted: same answer on every read
      if (job.state === 'cancelled') return { status: 200, body: { id: job.id, status: 'cancelled' } };
      return { status: 303, headers: { location: `/exports/${job.id}` } };
    }
    const done = /^\/exports\/([^/]+)$/.exec(req.path);
    if (done && req.method === 'GET') {
      const job = jobs.find((j) => j.id === decodeURIComponent(done[1]!));
      if (job?.state !== 'succeeded') return err(404, ASYNC_CODES.notFound);
      return {
        status: 200,
        body: { id: job.id, dataset: job.dataset, format: job.format, status: 'succeeded', rows: 42 },
      };
    }
    return err(404, ASYNC_CODES.notFound);
  };

  return start({
    requestId: ['x-ms-request-id', 'req_'],
    kinds: ['exports', 'exports.create'],
    records: () =>
      jobs.map(({ id, dataset, format, clientRequestId, state }) => ({ id, dataset, format, clientRequestId, state })),
    handle,
  });
}
