/** Tool calls the upstream runs only as tasks, which the fence runs itself: created, polled, their result fetched. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CreateTaskResultSchema,
  ErrorCode,
  McpError,
  type Request,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';

/** A tool the upstream runs only as a task. The fence offers its hosts no tasks (a host's could not go through the
 * ledger): it runs such a call as a task itself, and lists it as a tool the host calls as any other. */
export const taskOnly = (tool: Pick<Tool, 'execution'> | undefined) => tool?.execution?.taskSupport === 'required';

const MIN_POLL_MS = 100;
/** The errors that say a request was not run; of a task's poll, they say nothing of the task. */
const NOT_RUN = new Set<number>([ErrorCode.InvalidParams, ErrorCode.MethodNotFound, ErrorCode.UrlElicitationRequired]);

/** `req` run as a task of `c`: its result, or the error it ended with. Polled as the upstream asks, but a task given up
 * on (the host cancelled, or the timeout) is cancelled at once, as a request is, not at the next poll (the SDK's own
 * loop waits out the poll interval first). `created` learns the task's id. */
export async function viaTask(
  c: Client,
  req: Request,
  schema: Parameters<Client['request']>[1],
  options: RequestOptions,
  created: (taskId: string) => void,
) {
  const { signal } = options;
  const cancel = (taskId: string) => void c.experimental.tasks.cancelTask(taskId).catch(() => undefined);
  // Its creation is not cancelled with the call (the task may exist already, its id then lost): a task created after the
  // call was given up on is cancelled once its id is known. Its progress comes under the creating request's token.
  const creating = c.request(req, CreateTaskResultSchema, {
    ...options,
    signal: undefined,
    timeout: undefined,
    task: {},
  });
  creating.then(({ task }) => signal?.aborted && cancel(task.taskId)).catch(() => undefined);
  const { task } = await Promise.race([creating, aborted(signal)]);
  created(task.taskId);
  const polls = { signal, timeout: options.timeout };
  try {
    for (;;) {
      const { status, pollInterval } = await c.experimental.tasks.getTask(task.taskId, polls);
      // input_required: tasks/result carries what the upstream asks, and answers once the task ends.
      if (status === 'completed' || status === 'input_required')
        return await c.experimental.tasks.getTaskResult(task.taskId, schema as never, polls);
      if (status === 'failed' || status === 'cancelled')
        throw new McpError(ErrorCode.InternalError, `the upstream's task for ${req.method} ${status}`);
      // An interval is the upstream's to suggest; one of 0 would be a busy loop against it.
      await sleep(Math.max(pollInterval ?? 1000, MIN_POLL_MS), undefined, { signal }).catch(() => undefined);
      signal?.throwIfAborted();
    }
  } catch (e) {
    // Created, the task may have run: no error of its polls says it did not (a restarted upstream's "Task not found"
    // is invalid params, a dead one's "Not connected" reads as never sent).
    if (signal?.aborted || (e instanceof McpError && !NOT_RUN.has(e.code))) throw e;
    throw new McpError(ErrorCode.InternalError, `the upstream's task may have run: ${(e as Error)?.message ?? e}`);
  } finally {
    if (signal?.aborted) cancel(task.taskId);
  }
}

/** Rejects with the signal's reason once it aborts. */
export const aborted = (signal: AbortSignal | undefined) =>
  new Promise<never>((_, reject) => {
    if (signal?.aborted) reject(signal.reason);
    signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
