"""No cloud credential value may land in an attempt folder. Terraform's files are checked in
tests/test_aws_backend.py; here the other writer of attempt folders, ansible-runner (which
copies the controller's environment into artifacts/<id>/command), with a real playbook."""

from __future__ import annotations

from deploybench.attempt import ansible

ACCESS_KEY = "AKIANOCREDTEST000001"
SECRET_KEY = "noCredTestSecret/DoNotWrite+1"
TOKEN = "noCredTestSessionToken+2"


def test_ansible_artifacts_hold_no_cloud_credentials(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        "- name: Show what a play sees\n"
        "  hosts: localhost\n"
        "  gather_facts: false\n"
        "  tasks:\n"
        "    - name: Print the secret key as the play sees it\n"
        "      ansible.builtin.debug:\n"
        "        msg: \"key=[{{ lookup('ansible.builtin.env', 'AWS_SECRET_ACCESS_KEY') }}]\"\n"
    )
    attempt = tmp_path / "runs" / "r1" / "t" / "nop" / "1"
    result = ansible.run_playbook(
        playbook, {"all": {"hosts": {"localhost": {"ansible_connection": "local"}}}}, {},
        attempt / "ansible",
    )  # fmt: skip
    assert result.ok, result
    files = [p for p in attempt.rglob("*") if p.is_file()]
    assert any(p.name == "command" for p in files)  # the file that used to hold them
    assert any(b"key=[]" in p.read_bytes() for p in files)  # the play saw no secret
    for path in files:
        data = path.read_bytes()
        for secret in (ACCESS_KEY, SECRET_KEY, TOKEN):
            assert secret.encode() not in data, f"{secret[:8]}... in {path}"
