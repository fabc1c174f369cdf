"""scikit-learn on row-sharded DistributedTensors through the array API (issue 44): with
``array_api_dispatch=True`` and ``SCIPY_ARRAY_API=1``, a representative set of estimators and metrics runs
scikit-learn's own code on tensors split on rows over 1, 2, 3 and 4 processes (uneven at 3 and 4), and equals
the same code on numpy arrays. Skips without scikit-learn and array-api-compat (the ``sklearn`` extra).
"""

import os

os.environ["SCIPY_ARRAY_API"] = "1"  # noqa: E402  (read when scipy is first imported)

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn", reason="scikit-learn is not installed (pip install meshrt[sklearn])")
pytest.importorskip("array_api_compat", reason="array-api-compat is not installed (pip install meshrt[sklearn])")

from mpi4py import MPI  # noqa: E402
from sklearn import metrics  # noqa: E402
from sklearn.calibration import CalibratedClassifierCV  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis  # noqa: E402
from sklearn.kernel_approximation import Nystroem  # noqa: E402
from sklearn.linear_model import (LogisticRegression, PoissonRegressor, Ridge, RidgeClassifier,  # noqa: E402
                                  RidgeClassifierCV, RidgeCV)
from sklearn.metrics import pairwise  # noqa: E402
from sklearn.mixture import GaussianMixture  # noqa: E402
from sklearn.model_selection import GridSearchCV, RandomizedSearchCV, cross_val_predict, train_test_split  # noqa: E402
from sklearn.naive_bayes import GaussianNB  # noqa: E402
from sklearn.pipeline import FeatureUnion, make_pipeline  # noqa: E402
from sklearn.preprocessing import (Binarizer, KernelCenterer, LabelBinarizer, LabelEncoder, MaxAbsScaler,  # noqa: E402
                                   MinMaxScaler, Normalizer, PolynomialFeatures, StandardScaler)

import meshrt.array_api as xp  # noqa: E402
from meshrt.array_api import GATHERS  # noqa: E402

MPI_NPROCS = (1, 2, 3, 4)
comm = MPI.COMM_WORLD

rng = np.random.default_rng(44)
X = rng.standard_normal((203, 6)) * np.array([1.0, 2, 3, 0.5, 5, 1]) + np.arange(6)
y = X @ rng.standard_normal(6) + 0.1 * rng.standard_normal(203)
labels = (y > np.median(y)).astype(np.int64)
classes3 = np.digitize(y, np.quantile(y, [0.33, 0.66])).astype(np.int64)


@pytest.fixture(autouse=True)
def dispatch():
    with sklearn.config_context(array_api_dispatch=True):
        yield


def values(a):
    return a.gather() if hasattr(a, "gather") else np.asarray(a)



def check(fn, rtol=1e-7, atol=1e-9, signs=False):
    got = fn(xp.asarray(X), xp.asarray(y), xp.asarray(labels))
    ref = fn(X, y, labels)
    got = [values(g) for g in (got if isinstance(got, tuple) else (got,))]
    ref = [np.asarray(r) for r in (ref if isinstance(ref, tuple) else (ref,))]
    for g, r in zip(got, ref):
        if signs:
            g, r = np.abs(g), np.abs(r)
        np.testing.assert_allclose(g, r, rtol=rtol, atol=atol)


def test_scalers_keep_rows_split():
    t = StandardScaler().fit_transform(xp.asarray(X))
    assert t.sharding.split_axes == ((0,),)
    check(lambda X, y, c: StandardScaler().fit_transform(X))
    check(lambda X, y, c: MinMaxScaler().fit_transform(X))


def test_pca_full_by_tsqr_and_covariance_eigh():
    GATHERS.clear()
    check(lambda X, y, c: (PCA(n_components=4, svd_solver="full").fit_transform(X),), signs=True)
    assert "linalg.svd" not in GATHERS  # the rows never gathered
    check(lambda X, y, c: (lambda p: (p.explained_variance_, np.abs(values(p.components_))))(
        PCA(n_components=3, svd_solver="covariance_eigh").fit(X)))


def test_ridge_svd_and_pipeline():
    check(lambda X, y, c: Ridge(solver="svd", alpha=0.5).fit(X, y).coef_)
    check(lambda X, y, c: make_pipeline(StandardScaler(), PCA(n_components=5, svd_solver="full"),
                                        Ridge(solver="svd")).fit(X, y).predict(X))


def test_logistic_regression_lbfgs():
    check(lambda X, y, c: LogisticRegression(solver="lbfgs").fit(X, c).predict_proba(X), rtol=1e-5, atol=1e-7)


def test_metrics():
    check(lambda X, y, c: float(metrics.r2_score(y, 0.9 * y + 0.1)))
    check(lambda X, y, c: float(metrics.mean_squared_error(y, 0.9 * y)))
    check(lambda X, y, c: float(metrics.accuracy_score(c, (X[:, 0] > 0) * 1)))
    check(lambda X, y, c: metrics.pairwise.euclidean_distances(X[:7], X[:5]), atol=1e-6)


def test_more_preprocessing():
    check(lambda X, y, c: MaxAbsScaler().fit_transform(X))
    check(lambda X, y, c: Normalizer().fit_transform(X))
    check(lambda X, y, c: Binarizer(threshold=1.0).fit_transform(X))
    check(lambda X, y, c: PolynomialFeatures(2).fit_transform(X))
    check(lambda X, y, c: KernelCenterer().fit_transform(pairwise.linear_kernel(X[:20], X[:20])))


def test_label_tools_see_every_process_labels():
    # LabelBinarizer builds a scipy matrix through DLPack (move_to numpy): the global labels, not a block
    check(lambda X, y, c: LabelEncoder().fit_transform(3 * c + 1))
    k = classes3
    got = LabelBinarizer().fit_transform(xp.asarray(k))
    np.testing.assert_array_equal(values(got), LabelBinarizer().fit_transform(k))


def test_pca_randomized_lda_and_ridge_variants():
    check(lambda X, y, c: PCA(n_components=3, svd_solver="randomized", power_iteration_normalizer="QR",
                              random_state=0).fit_transform(X), signs=True, rtol=1e-6, atol=1e-8)
    check(lambda X, y, c: RidgeCV(alphas=(0.1, 1.0, 10.0)).fit(X, y).coef_)
    k = classes3
    got = RidgeClassifier(solver="svd").fit(xp.asarray(X), xp.asarray(k)).decision_function(xp.asarray(X))
    np.testing.assert_allclose(values(got), RidgeClassifier(solver="svd").fit(X, k).decision_function(X),
                               rtol=1e-7, atol=1e-9)
    got = RidgeClassifierCV(alphas=(0.1, 1.0, 10.0)).fit(xp.asarray(X), xp.asarray(k))
    ref = RidgeClassifierCV(alphas=(0.1, 1.0, 10.0)).fit(X, k)
    assert float(got.alpha_) == ref.alpha_
    np.testing.assert_allclose(values(got.decision_function(xp.asarray(X))), ref.decision_function(X),
                               rtol=1e-7, atol=1e-9)
    got = LinearDiscriminantAnalysis(solver="svd").fit(xp.asarray(X), xp.asarray(k)).predict_proba(xp.asarray(X))
    np.testing.assert_allclose(values(got), LinearDiscriminantAnalysis(solver="svd").fit(X, k).predict_proba(X),
                               rtol=1e-6, atol=1e-9)


def test_naive_bayes_pairwise_and_splitting():
    k = classes3
    got = GaussianNB().fit(xp.asarray(X), xp.asarray(k)).predict_proba(xp.asarray(X))
    np.testing.assert_allclose(values(got), GaussianNB().fit(X, k).predict_proba(X), rtol=1e-6, atol=1e-9)
    check(lambda X, y, c: pairwise.rbf_kernel(X[:30], X[:9]))
    check(lambda X, y, c: pairwise.cosine_similarity(X[:30], X[:9]))
    check(lambda X, y, c: pairwise.pairwise_distances(X[:30], X[:9], metric="manhattan"))
    check(lambda X, y, c: tuple(train_test_split(X, y, test_size=0.25, shuffle=False)))
    check(lambda X, y, c: metrics.confusion_matrix(c, (X[:, 0] > 1) * 1))
    check(lambda X, y, c: float(metrics.f1_score(c, (X[:, 0] > 1) * 1)))


def test_mixture_kernel_approximation_model_selection():
    # kmeans initialisation is refused by scikit-learn itself under array API dispatch
    check(lambda X, y, c: GaussianMixture(2, init_params="random_from_data", random_state=0).fit(X).means_,
          rtol=1e-6, atol=1e-8)
    check(lambda X, y, c: Nystroem(n_components=20, random_state=0).fit_transform(X), rtol=1e-6, atol=1e-8)
    check(lambda X, y, c: float(GridSearchCV(Ridge(solver="svd"), {"alpha": [0.1, 1.0]}, cv=3).fit(X, y).best_score_))
    check(lambda X, y, c: float(RandomizedSearchCV(Ridge(solver="svd"), {"alpha": [0.01, 0.1, 1.0, 10.0]}, n_iter=3,
                                                   cv=3, random_state=0).fit(X, y).best_score_))
    check(lambda X, y, c: cross_val_predict(Ridge(solver="svd"), X, y, cv=3))
    check(lambda X, y, c: FeatureUnion([("s", StandardScaler()), ("m", MinMaxScaler())]).fit_transform(X))
    check(lambda X, y, c: PoissonRegressor(max_iter=300).fit(X, _counts(X)).coef_, rtol=1e-5, atol=1e-7)
    check(lambda X, y, c: CalibratedClassifierCV(LogisticRegression(), method="temperature", cv=3)
          .fit(X, c).predict_proba(X), rtol=1e-5, atol=1e-7)


def _counts(X):
    m = np if isinstance(X, np.ndarray) else xp
    return m.floor(m.exp(0.1 * X[:, 0]))


REGRESSION_METRICS = ["r2_score", "mean_squared_error", "mean_absolute_error", "explained_variance_score",
                      "max_error", "mean_absolute_percentage_error", "median_absolute_error", "mean_tweedie_deviance",
                      "d2_tweedie_score", "mean_poisson_deviance", "mean_gamma_deviance", "mean_squared_log_error",
                      "root_mean_squared_error"]
CLASSIFICATION_METRICS = ["accuracy_score", "zero_one_loss", "precision_score", "recall_score", "f1_score",
                          "hamming_loss", "jaccard_score", "matthews_corrcoef", "balanced_accuracy_score",
                          "cohen_kappa_score", "multilabel_confusion_matrix", "precision_recall_fscore_support"]
SCORE_METRICS = ["roc_auc_score", "roc_curve", "log_loss", "brier_score_loss", "average_precision_score",
                 "precision_recall_curve", "det_curve"]


def test_metrics_on_split_labels_and_scores():
    """Each metric on labels and scores split like the data (uneven at 3 processes), equal to numpy's."""
    for name in REGRESSION_METRICS:
        f = getattr(metrics, name)
        check(lambda X, y, c: _flat(f((y * y) + 1, (y * y) + 1.5 + 0.1 * y)))
    for name in CLASSIFICATION_METRICS:
        f = getattr(metrics, name)
        check(lambda X, y, c: _flat(f(c, (c + (X[:, 0] > 1) * 1) % 2)))
    for name in SCORE_METRICS:
        f = getattr(metrics, name)
        check(lambda X, y, c: _flat(f(c, 1 / (1 + (np if isinstance(y, np.ndarray) else xp).exp(-y)))))


def _flat(r):
    """A metric's result as a tuple of arrays (floats, tuples of arrays, named results)."""
    return tuple(values(v) for v in r if v is not None) if isinstance(r, tuple) else (values(r),)
