// AI SDK 7: this package's tools, loaded with `ai` resolved to ai@7 (npm alias ai7).
import { describe, expect, it, vi } from 'vitest';
import { reissuedToolCall, workflowStepRecipe } from './ai-versions.js';

vi.mock('ai', async () => await import('ai7'));

describe.skipIf(Number(process.versions.node.split('.')[0]) < 22)(
  'AI SDK 7 (needs Node >= 22; skipped on older Node)',
  () => {
    it('the installed major is 7', async () => {
      const { createRequire } = await import('node:module');
      expect(createRequire(import.meta.url)('ai7/package.json').version).toMatch(/^7\./);
    });
    it('a re-issued tool call maps to the same business operation: one charge, the same result', async () => {
      await reissuedToolCall(await import('ai7'), (await import('ai7/test')) as never, 'v3', '7');
    });
    it('WorkflowAgent recipe: the tool inside a step with runtime retries off, the step id as run id; a re-executed step sends nothing', async () => {
      await workflowStepRecipe();
    });
  },
);
