// AI SDK 7 (needs Node >= 22): this package's tools, loaded with `ai` resolved to ai@7 (npm alias ai7).
import { it, vi } from 'vitest';
import { describeAiMajor, workflowStepRecipe } from './ai-versions.js';

vi.mock('ai', async () => await import('ai7'));

describeAiMajor(
  '7',
  'v3',
  async () => [await import('ai7'), await import('ai7/test')],
  () => {
    it('WorkflowAgent recipe: the tool inside a step with runtime retries off, the step id as run id; a re-executed step sends nothing', async () => {
      await workflowStepRecipe();
    });
  },
);
