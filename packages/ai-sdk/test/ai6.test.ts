// AI SDK 6: this package's tools, loaded with `ai` resolved to ai@6 (npm alias ai6).
import { vi } from 'vitest';
import { describeAiMajor } from './ai-versions.js';

vi.mock('ai', async () => await import('ai6'));

describeAiMajor('6', 'v3', async () => [await import('ai6'), await import('ai6/test')]);
