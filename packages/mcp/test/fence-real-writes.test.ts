/**
 * server-memory's and server-filesystem's state-changing tools fenced as docs/fence-an-mcp-server.md shows, driven by
 * the official SDK client (which validates each structured answer against the listed output schema): nested arrays of
 * objects as intent, defaults, two hosts at once over --http, answers lost on the fence→upstream hop.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  callTool as call,
  droppingAnswers,
  fencesOver,
  filesystemServer,
  httpClientOf,
  lookupFence,
  lookupPolicy,
  memoryCreate,
  memoryServer,
  servedOverHttp,
  tempDir,
  wrapped,
} from './fence-helpers.js';

describe('server-memory over --http, two hosts', () => {
  it('identical add_observations from both at once: one run, both done with its answer; the graph has it once', async () => {
    const dir = tempDir('retrysafe-memory-http-');
    const tools = {
      create_entities: { kind: 'create', intent: ['entities'] },
      add_observations: { kind: 'upsert', intent: ['observations'] },
    };
    const make = await fencesOver(
      { command: process.execPath, args: [memoryServer], env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') } },
      { name: 'memory', timeoutMs: 2000, policy: lookupPolicy, tools },
    );
    const http = await servedOverHttp(make);
    const [a, b] = [await httpClientOf(http), await httpClientOf(http)];
    await Promise.all([a.listTools(), b.listTools()]);
    const entities = [{ name: 'Ada', entityType: 'person', observations: [] }];
    expect((await call(a, 'create_entities', { entities }))._meta?.retrysafe?.status).toBe('done');
    const args = { observations: [{ entityName: 'Ada', contents: ['math', 'engines'] }] };
    const both = await Promise.all([call(a, 'add_observations', args), call(b, 'add_observations', args)]);
    expect(both.map((x) => x._meta?.retrysafe?.status)).toEqual(['done', 'done']);
    expect(both[1]!.structuredContent).toEqual(both[0]!.structuredContent);
    expect(both[0]!.structuredContent).toEqual({
      results: [{ entityName: 'Ada', addedObservations: ['math', 'engines'] }],
    });
    const graph = (await call(b, 'read_graph', {})).structuredContent as { entities: { observations: string[] }[] };
    expect(graph.entities[0]!.observations).toEqual(['math', 'engines']);
  });
});

describe('server-filesystem: tools that are no idempotent, their answer lost', () => {
  it('edit_file (edits: an array of objects, dryRun defaulted) is not applied twice; move_file not sent again', async () => {
    const dir = tempDir('retrysafe-fs-edit-');
    const root = tempDir('retrysafe-fs-edit-root-');
    const fence = lookupFence(dir, 'files', {
      edit_file: { kind: 'set', intent: ['path', 'edits'] },
      move_file: { kind: 'set', intent: ['source', 'destination'] },
      write_file: { kind: 'set', idempotentByNature: true, intent: ['path'] },
    });
    const client = await wrapped(fence, droppingAnswers('edit_file', filesystemServer, root));
    await client.listTools();
    const path = join(root, 'a.txt');
    expect((await call(client, 'write_file', { path, content: 'one' }))._meta?.retrysafe?.status).toBe('done');
    // Applied twice, this edit would give "one two two".
    const edit = { path, edits: [{ oldText: 'one', newText: 'one two' }] };
    const lost = await call(client, 'edit_file', edit);
    expect(lost._meta?.retrysafe?.status).toBe('needs-human');
    const again = await call(client, 'edit_file', edit);
    expect(again._meta?.retrysafe?.status).toBe('needs-human');
    expect(readFileSync(path, 'utf8')).toBe('one two');
    const moved = await call(client, 'move_file', { source: path, destination: join(root, 'b.txt') });
    expect(moved._meta?.retrysafe?.status).toBe('done');
    const twice = await call(client, 'move_file', { source: path, destination: join(root, 'b.txt') });
    expect(twice._meta?.retrysafe).toMatchObject({ status: 'done', adopted: true });
    expect(twice.structuredContent).toEqual(moved.structuredContent);
  });
});

describe('server-memory: a call its host cancels while the upstream holds it', () => {
  it('the re-issued call is answered done, and the entity is made once', async () => {
    const dir = tempDir('retrysafe-memory-cancel-');
    const fence = lookupFence(
      dir,
      'memory',
      {
        create_entities: memoryCreate,
      },
      300,
    );
    const client = await wrapped(fence, droppingAnswers('create_entities', memoryServer), {
      MEMORY_FILE_PATH: join(dir, 'memory.jsonl'),
    });
    await client.listTools();
    const args = { entities: [{ name: 'Ada', entityType: 'person', observations: ['math'] }] };
    const cancel = new AbortController();
    const first = client.callTool({ name: 'create_entities', arguments: args }, undefined, { signal: cancel.signal });
    await client.ping(); // answered once the call was taken in
    cancel.abort();
    await expect(first).rejects.toThrow();
    const again = await call(client, 'create_entities', args);
    expect(again._meta?.retrysafe?.status).toBe('done');
    const graph = (await call(client, 'read_graph', {})).structuredContent as { entities: { name: string }[] };
    expect(graph.entities.filter((e) => e.name === 'Ada')).toHaveLength(1);
  });
});
