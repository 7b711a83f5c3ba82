// The official `openai` JavaScript SDK against a real `inferdesk-cli serve` with tiny-chat (CPU):
// chat completions streamed and not, completions, models, and the SDK's typed errors. The server
// is started here on a free port with an API key; it must stop with exit code 0 on SIGTERM.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import OpenAI from 'openai';

const cli = process.env.INFERDESK_CLI;
const modelDir = process.env.INFERDESK_MODEL;
const apiKey = 'sk-inferdesk-test';
let server;
let client;

before(async () => {
  assert.ok(cli && modelDir, 'INFERDESK_CLI and INFERDESK_MODEL must be set');
  server = spawn(cli, ['serve', '--model', modelDir, '--port', '0', '--threads', '1', '--max-model-len', '512',
                       '--served-model-name', 'tiny', '--api-key', apiKey], { stdio: ['ignore', 'ignore', 'pipe'] });
  const baseURL = await new Promise((resolve, reject) => {
    let log = '';
    const timer = setTimeout(() => reject(new Error('server did not start:\n' + log)), 60000);
    server.stderr.on('data', (chunk) => {
      log += chunk;
      const m = log.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    server.on('exit', (code) => reject(new Error(`server exited (${code}):\n` + log)));
  });
  client = new OpenAI({ baseURL: baseURL + '/v1', apiKey, maxRetries: 0, timeout: 60000 });
});

after(async () => {
  const code = await new Promise((resolve) => { server.on('exit', resolve); server.kill('SIGTERM'); });
  assert.equal(code, 0, 'the server exits 0 on SIGTERM');
});

const greedy = { temperature: 0, ignore_eos: true };
const messages = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello there' }];

test('models.list names the served model', async () => {
  const models = [];
  for await (const m of client.models.list()) models.push(m);
  assert.deepEqual(models.map((m) => m.id), ['tiny']);
  assert.equal(models[0].object, 'model');
});

test('chat completion, whole response', async () => {
  const r = await client.chat.completions.create({ model: 'tiny', messages, max_tokens: 12, ...greedy });
  assert.equal(r.object, 'chat.completion');
  assert.match(r.id, /^chatcmpl-/);
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 12);
  assert.ok(r.usage.prompt_tokens > 5);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + 12);
});

test('chat completion, streamed, gives the same text and the usage', async () => {
  const whole = await client.chat.completions.create({ model: 'tiny', messages, max_tokens: 10, ...greedy });
  const stream = await client.chat.completions.create({
    model: 'tiny', messages, max_tokens: 10, stream: true, stream_options: { include_usage: true }, ...greedy });
  let text = '';
  let finish = null;
  let usage = null;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks += 1;
    assert.equal(chunk.object, 'chat.completion.chunk');
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.delta?.content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.ok(chunks >= 10);
  assert.equal(text, whole.choices[0].message.content);
  assert.equal(finish, 'length');
  assert.deepEqual(usage, whole.usage);
});

test('chat completion with n, seed, stop and logprobs', async () => {
  const req = { model: 'tiny', messages, max_tokens: 8, temperature: 1.0, seed: 7, n: 2, ignore_eos: true,
                logprobs: true, top_logprobs: 2 };
  const a = await client.chat.completions.create(req);
  const b = await client.chat.completions.create(req);
  assert.equal(a.choices.length, 2);
  assert.deepEqual(a.choices.map((c) => c.message.content), b.choices.map((c) => c.message.content));
  assert.equal(a.usage.completion_tokens, 16);
  assert.equal(a.choices[0].logprobs.content.length, 8);
  assert.equal(a.choices[0].logprobs.content[0].top_logprobs.length, 2);
  const text = a.choices[0].message.content;
  // Choice 0 drew with seed 7: the same request with n = 1 makes the same text, and stops at a
  // stop string taken from it.
  const stop = text.slice(2, 4);
  assert.equal(stop.length, 2, `text too short: ${JSON.stringify(text)}`);
  const s = await client.chat.completions.create({ ...req, n: 1, logprobs: false, top_logprobs: undefined, stop: [stop] });
  assert.equal(s.choices[0].finish_reason, 'stop');
  assert.equal(s.choices[0].message.content, text.slice(0, text.indexOf(stop)));
});

test('completions with text and token-id prompts, streamed and not', async () => {
  const r = await client.completions.create({ model: 'tiny', prompt: 'the quick brown', max_tokens: 6, ...greedy });
  assert.equal(r.object, 'text_completion');
  assert.equal(r.usage.completion_tokens, 6);
  const ids = await client.completions.create({ model: 'tiny', prompt: [5, 6, 7, 8], max_tokens: 4, ...greedy });
  assert.equal(ids.usage.prompt_tokens, 4);
  const stream = await client.completions.create({ model: 'tiny', prompt: 'the quick brown', max_tokens: 6, stream: true, ...greedy });
  let text = '';
  for await (const chunk of stream) for (const c of chunk.choices) text += c.text;
  assert.equal(text, r.choices[0].text);
});

test('errors arrive as the SDK typed errors', async () => {
  await assert.rejects(client.chat.completions.create({ model: 'no-such-model', messages }), (e) => {
    assert.ok(e instanceof OpenAI.NotFoundError);
    assert.equal(e.status, 404);
    assert.equal(e.param, 'model');
    return true;
  });
  await assert.rejects(client.chat.completions.create({ model: 'tiny', messages, temperature: -1 }), (e) => {
    assert.ok(e instanceof OpenAI.BadRequestError);
    assert.equal(e.status, 400);
    assert.equal(e.param, 'temperature');
    assert.match(e.message, /temperature/);
    return true;
  });
  await assert.rejects(client.completions.create({ model: 'tiny', prompt: Array(600).fill(5) }), (e) => {
    assert.ok(e instanceof OpenAI.BadRequestError);
    assert.match(e.message, /maximum context length/);
    return true;
  });
  await assert.rejects(client.chat.completions.create({ model: 'tiny', messages, stream: true, top_p: 3 }), (e) => {
    assert.ok(e instanceof OpenAI.BadRequestError);
    return true;
  });
  const wrongKey = new OpenAI({ baseURL: client.baseURL, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(wrongKey.models.list(), (e) => {
    assert.ok(e instanceof OpenAI.AuthenticationError);
    assert.equal(e.status, 401);
    return true;
  });
});
