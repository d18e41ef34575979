"""The official `openai` client against `serve --models --model toy=FILE.gguf`: the
models listed, a chat answered by the user's model, the default model's id refused.
Prints one `key value` line per check. Usage: own_gguf_client.py URL"""

import sys

import openai

client = openai.OpenAI(base_url=sys.argv[1] + "/v1", api_key="none")
print("models", ",".join(m.id for m in client.models.list().data))


def chat():
    return client.chat.completions.create(
        model="toy",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "hello world"},
        ],
        max_tokens=6,
        temperature=0,
    )


first = chat()
print("chat_finish", first.choices[0].finish_reason)
print("chat_prompt_tokens", first.usage.prompt_tokens)
print("chat_completion_tokens", first.usage.completion_tokens)
again = chat()
print("chat_same", again.choices[0].message.content == first.choices[0].message.content)
try:
    client.completions.create(model="gemma-3-270m", prompt="hello", max_tokens=2)
    print("default_id accepted")
except openai.NotFoundError as e:
    print("default_id", e.status_code)
