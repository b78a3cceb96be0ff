// AI SDK 5: this package's tools, loaded with `ai` resolved to ai@5 (npm alias ai5).
import { vi } from 'vitest';
import { describeAiMajor } from './ai-versions.js';

vi.mock('ai', async () => await import('ai5'));

describeAiMajor('5', 'v2', async () => [await import('ai5'), await import('ai5/test')]);
