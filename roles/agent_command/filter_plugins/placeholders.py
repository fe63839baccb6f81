"""fill_placeholders: the agent spec's placeholders ({workdir}, {model}, ...) filled in by a
plain, single-pass substitution. Nothing else of the text is read: no Jinja, no shell, no
placeholder inside a filled-in value, and the result is marked unsafe so Ansible never
templates it either."""

import re

from ansible.utils.unsafe_proxy import wrap_var

_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def fill_placeholders(text, values):
    values = {str(k): str(v) for k, v in values.items()}
    filled = _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), str(text))
    return wrap_var(filled)


class FilterModule:
    def filters(self):
        return {"fill_placeholders": fill_placeholders}
