"""The stop command's output (tasks/main.yml) in its three sections: what the first end step
printed, what the collection printed, what the second end step printed. A section starts after
the first line that is exactly its marker; a marker that never came leaves its section and the
later ones empty, so a step that did not run has printed nothing."""


def stop_sections(lines, marks):
    sections = [[], [], []]
    index = 0
    ahead = [marks["collect"], marks["again"]]
    for line in lines:
        text = str(line).strip()
        if index < 2 and text == ahead[index]:
            index += 1
            continue
        sections[index].append(text)
    return sections


class FilterModule:
    def filters(self):
        return {"stop_sections": stop_sections}
