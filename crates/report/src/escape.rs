//! Escaping of text for HTML and SVG (element content and quoted attribute values alike).
//!
//! Scenario names, stream names and platform notes come from user files; every piece of
//! text that reaches `report.html` goes through [`escape`].

/// `text` with `& < > " '` replaced by character references.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_characters_are_replaced() {
        assert_eq!(
            escape(r#"<script>alert("x & 'y'")</script>"#),
            "&lt;script&gt;alert(&quot;x &amp; &#39;y&#39;&quot;)&lt;/script&gt;"
        );
        assert_eq!(escape("ar-glasses 60 s"), "ar-glasses 60 s");
    }
}

/// `text` with control characters (terminal escape sequences among them) replaced by `?`,
/// for names from user files printed on a terminal.
pub fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

#[cfg(test)]
mod printable_tests {
    use super::*;

    #[test]
    fn control_characters_do_not_reach_the_terminal() {
        assert_eq!(printable("car\u{1b}[2J\n"), "car?[2J?");
    }
}
