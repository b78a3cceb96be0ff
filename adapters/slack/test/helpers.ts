export const TOKEN = 'xoxb-test-token-not-a-secret';
export const CHANNEL = 'C0TEST0001';

export const postParams = (i = 0) => ({ channel: CHANNEL, text: `Deploy ${i} finished` });
