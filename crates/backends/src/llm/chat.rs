//! A chat written the way a text model was trained to read it: its file's chat template
//! (`tokenizer.chat_template`) applied to the messages, by llama.cpp, which recognises the
//! template families in common use (ChatML, Llama 2 and 3, Gemma, Mistral, Phi, …; not
//! arbitrary Jinja).

/// Why a chat could not be written with the model's template.
#[derive(Debug, thiserror::Error)]
pub enum ChatTemplateError {
    /// A message holds a NUL byte, which C strings cannot carry.
    #[error("message {index} contains a NUL byte: remove it")]
    Nul {
        /// The message.
        index: usize,
    },
    /// llama.cpp does not know the template.
    #[error(
        "llama.cpp does not recognise this model's chat template (it knows the common families' templates, not arbitrary Jinja): use the completions endpoint with a prompt written in the model's format"
    )]
    Unknown,
    /// This build has no llama.cpp to apply templates with.
    #[error(
        "this build has no llama.cpp (cargo feature `llama`) to write chats with a model's template: use the completions endpoint"
    )]
    NoEngine,
}

/// `messages` (role, content) written with chat template `template`, ending with the
/// assistant's turn opened.
pub fn apply_template(
    template: &str,
    messages: &[(String, String)],
) -> Result<String, ChatTemplateError> {
    #[cfg(feature = "llama")]
    return crate::llm::llama_vocab::apply_chat_template(template, messages);
    #[cfg(not(feature = "llama"))]
    {
        let _ = (template, messages);
        Err(ChatTemplateError::NoEngine)
    }
}

#[cfg(all(test, feature = "llama"))]
mod tests {
    use super::*;

    fn chat() -> Vec<(String, String)> {
        vec![
            ("system".into(), "Be brief.".into()),
            ("user".into(), "Hi".into()),
        ]
    }

    #[test]
    fn a_known_family_writes_its_turns_and_opens_the_assistants() {
        // ChatML, as Qwen and SmolLM files carry it.
        let chatml = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}";
        let text = apply_template(chatml, &chat()).expect("ChatML is known");
        assert!(text.contains("<|im_start|>user\nHi<|im_end|>"), "{text}");
        assert!(text.ends_with("<|im_start|>assistant\n"), "{text}");
        // A template named by its family.
        let gemma = apply_template("gemma", &chat()).expect("gemma is known");
        assert!(gemma.contains("<start_of_turn>user\n"), "{gemma}");
        assert!(gemma.ends_with("<start_of_turn>model\n"), "{gemma}");
    }

    #[test]
    fn an_unknown_template_or_a_nul_is_an_error_naming_the_fix() {
        let e = apply_template("{{ nothing known }}", &chat()).unwrap_err();
        assert!(e.to_string().contains("completions endpoint"), "{e}");
        let bad = vec![("user".to_string(), "a\0b".to_string())];
        let e = apply_template("gemma", &bad).unwrap_err();
        assert!(e.to_string().contains("message 0"), "{e}");
    }
}
