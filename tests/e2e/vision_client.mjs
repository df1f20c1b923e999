// The official openai SDK sends an image as a data: URL in a chat message to a running
// actorllm server serving a vision-language model; prints the greedy answer's text.
//   node vision_client.mjs BASE_URL IMAGE_PATH MIME_TYPE QUESTION
import fs from 'node:fs';
import OpenAI from 'openai';

const [base, imagePath, mime, question] = process.argv.slice(2);
if (!base || !imagePath || !mime || !question) {
  console.error('usage: node vision_client.mjs BASE_URL IMAGE_PATH MIME_TYPE QUESTION');
  process.exit(2);
}
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'not-needed', maxRetries: 0 });
const model = (await client.models.list()).data[0].id;
const url = `data:${mime};base64,${fs.readFileSync(imagePath).toString('base64')}`;
const reply = await client.chat.completions.create({
  model,
  messages: [{ role: 'user', content: [
    { type: 'image_url', image_url: { url } },
    { type: 'text', text: question },
  ] }],
  max_tokens: 12,
  temperature: 0,
});
process.stdout.write(JSON.stringify(reply.choices[0].message.content));
