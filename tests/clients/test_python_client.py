"""The official ``kubernetes`` Python client and lightkube, unmodified, against the lab."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from tests.support.lab import LiveLab


@pytest.fixture(scope="module")
def core(lab: LiveLab) -> Iterator[client.CoreV1Api]:
    api_client = config.new_client_from_config(config_file=str(lab.kubeconfig))
    try:
        yield client.CoreV1Api(api_client)
    finally:
        api_client.close()


def configmap(name: str, **data: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data=data)


def test_create_read_list(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map("default", configmap("py-a", k="v"))
    assert created.metadata.resource_version
    read = core.read_namespaced_config_map("py-a", "default")
    assert read.data == {"k": "v"}
    names = [c.metadata.name for c in core.list_namespaced_config_map("default").items]
    assert "py-a" in names


def test_version_api_reads_the_server_version(core: client.CoreV1Api) -> None:
    """``VersionApi.get_code`` GETs ``/version/``, with the trailing slash."""
    info = client.VersionApi(core.api_client).get_code()
    assert (info.major, info.minor) == ("1", "37")
    assert info.git_version.startswith("v1.37.")


def test_replace_with_a_stale_resource_version_is_409(core: client.CoreV1Api) -> None:
    first = core.create_namespaced_config_map("default", configmap("py-stale", k="1"))
    first.data = {"k": "2"}
    core.replace_namespaced_config_map("py-stale", "default", first)
    first.data = {"k": "3"}  # still carries the old resourceVersion
    with pytest.raises(ApiException) as caught:
        core.replace_namespaced_config_map("py-stale", "default", first)
    assert caught.value.status == 409
    assert "the object has been modified" in str(caught.value.body)


def test_pagination_with_continue(core: client.CoreV1Api) -> None:
    for i in range(5):
        core.create_namespaced_config_map("default", configmap(f"py-page-{i}"))
    seen: list[str | None] = []
    token = None
    while True:
        page = core.list_namespaced_config_map("default", limit=2, _continue=token, label_selector="")
        seen += [c.metadata.name for c in page.items]
        token = page.metadata._continue
        if not token:
            break
    assert [n for n in seen if n and n.startswith("py-page-")] == [f"py-page-{i}" for i in range(5)]


def test_watch_sees_a_change_made_after_it_started(core: client.CoreV1Api) -> None:
    start = core.list_namespaced_config_map("default").metadata.resource_version
    created = threading.Event()

    def make() -> None:
        created.wait(5)
        core.create_namespaced_config_map("default", configmap("py-watched"))

    maker = threading.Thread(target=make)
    maker.start()
    w = watch.Watch()
    try:
        for event in w.stream(
            core.list_namespaced_config_map, "default", resource_version=start, timeout_seconds=10
        ):
            created.set()
            if event["object"].metadata.name == "py-watched":
                assert event["type"] == "ADDED"
                break
        else:
            pytest.fail("the watch never delivered the new ConfigMap")
    finally:
        created.set()
        w.stop()
        maker.join()


def test_watch_from_a_too_old_resource_version_raises_410(tmp_path: Path) -> None:
    small = LiveLab(tmp_path / "lab", KUBELAB_WATCH_CACHE_WINDOW="3")
    try:
        api_client = config.new_client_from_config(config_file=str(small.kubeconfig))
        api = client.CoreV1Api(api_client)
        first = api.create_namespaced_config_map("default", configmap("old"))
        for i in range(5):
            api.create_namespaced_config_map("default", configmap(f"newer-{i}"))
        w = watch.Watch()
        with pytest.raises(ApiException) as caught:
            for _ in w.stream(
                api.list_namespaced_config_map,
                "default",
                resource_version=first.metadata.resource_version,
                timeout_seconds=5,
            ):
                pass
        assert caught.value.status == 410
        api_client.close()
    finally:
        small.stop()


def test_lightkube_lists_and_gets(lab: LiveLab) -> None:
    from lightkube import Client, KubeConfig
    from lightkube.models.meta_v1 import ObjectMeta
    from lightkube.resources.core_v1 import ConfigMap, Namespace

    kube = Client(KubeConfig.from_file(str(lab.kubeconfig)))
    names = {ns.metadata.name for ns in kube.list(Namespace)}
    assert "default" in names
    made = kube.create(ConfigMap(metadata=ObjectMeta(name="lk-a"), data={"x": "y"}), namespace="default")
    assert made.metadata.resourceVersion
    assert kube.get(ConfigMap, "lk-a", namespace="default").data == {"x": "y"}


def test_access_reviews_and_rbac_objects_round_trip(lab: LiveLab) -> None:
    api_client = config.new_client_from_config(config_file=str(lab.kubeconfig))
    try:
        authz = client.AuthorizationV1Api(api_client)
        rbac = client.RbacAuthorizationV1Api(api_client)
        rbac.create_namespaced_role_binding(
            "default",
            client.V1RoleBinding(
                metadata=client.V1ObjectMeta(name="py-viewer"),
                role_ref=client.V1RoleRef(
                    api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="view"
                ),
                subjects=[
                    client.RbacV1Subject(kind="User", name="py-user", api_group="rbac.authorization.k8s.io")
                ],
            ),
        )
        review = authz.create_subject_access_review(
            client.V1SubjectAccessReview(
                spec=client.V1SubjectAccessReviewSpec(
                    user="py-user",
                    resource_attributes=client.V1ResourceAttributes(
                        verb="list", resource="pods", namespace="default"
                    ),
                )
            )
        )
        assert review.status.allowed is True
        assert review.status.reason == (
            'RBAC: allowed by RoleBinding "py-viewer/default" of ClusterRole "view" to User "py-user"'
        )
        mine = authz.create_self_subject_rules_review(
            client.V1SelfSubjectRulesReview(spec=client.V1SelfSubjectRulesReviewSpec(namespace="default"))
        )
        assert any(rule.resources == ["*"] and rule.verbs == ["*"] for rule in mine.status.resource_rules)
        selectors = rbac.read_cluster_role("view").aggregation_rule.cluster_role_selectors
        assert selectors is not None and selectors[0].match_labels == {
            "rbac.authorization.k8s.io/aggregate-to-view": "true"
        }
    finally:
        api_client.close()


def test_a_validating_admission_policy_written_and_enforced_with_the_official_client(
    core: client.CoreV1Api,
) -> None:
    """The client's own models for both kinds round-trip, and a refused create raises its 422."""
    admission = client.AdmissionregistrationV1Api(core.api_client)
    rule = client.V1NamedRuleWithOperations(
        api_groups=[""], api_versions=["v1"], operations=["CREATE"], resources=["secrets"]
    )
    policy = client.V1ValidatingAdmissionPolicy(
        metadata=client.V1ObjectMeta(name="py-owned"),
        spec=client.V1ValidatingAdmissionPolicySpec(
            match_constraints=client.V1MatchResources(resource_rules=[rule]),
            validations=[
                client.V1Validation(expression="'owner' in object.metadata.labels", message="no owner")
            ],
        ),
    )
    created = admission.create_validating_admission_policy(policy)
    assert created.spec.failure_policy == "Fail", "defaulted as upstream"
    # Bound to the Secrets this test labels only: the lab is shared with other tests.
    binding = client.V1ValidatingAdmissionPolicyBinding(
        metadata=client.V1ObjectMeta(name="py-owned"),
        spec=client.V1ValidatingAdmissionPolicyBindingSpec(
            policy_name="py-owned",
            validation_actions=["Deny"],
            match_resources=client.V1MatchResources(
                object_selector=client.V1LabelSelector(match_labels={"py-vap": "checked"})
            ),
        ),
    )
    admission.create_validating_admission_policy_binding(binding)
    try:
        listed = admission.list_validating_admission_policy_binding().items
        assert [b.spec.policy_name for b in listed if b.metadata.name == "py-owned"] == ["py-owned"]
        unowned = client.V1Secret(metadata=client.V1ObjectMeta(name="py-s", labels={"py-vap": "checked"}))
        with pytest.raises(ApiException) as caught:
            core.create_namespaced_secret("default", unowned)
        assert caught.value.status == 422
        assert "ValidatingAdmissionPolicy 'py-owned' with binding 'py-owned' denied request: no owner" in str(
            caught.value.body
        )
        owned = client.V1Secret(
            metadata=client.V1ObjectMeta(name="py-s", labels={"py-vap": "checked", "owner": "py"})
        )
        labels = core.create_namespaced_secret("default", owned).metadata.labels
        assert labels is not None and labels["owner"] == "py"
    finally:
        admission.delete_validating_admission_policy_binding("py-owned")
        admission.delete_validating_admission_policy("py-owned")
