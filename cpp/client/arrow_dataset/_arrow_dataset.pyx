# cython: language_level = 3
# distutils: language = c++
"""A skyhook dataset as an Arrow C++ Dataset that pyarrow, Acero, DuckDB and
Polars scan natively; each fragment's scan calls the client's execution layer."""

from cpython.ref cimport PyObject
from libc.stdint cimport int64_t
from libcpp.memory cimport shared_ptr
from libcpp.string cimport string as c_string
from libcpp.vector cimport vector

from pyarrow._compute cimport Expression
from pyarrow._dataset cimport Dataset, FragmentScanOptions, Scanner
from pyarrow.includes.libarrow cimport CExpression, CRecordBatchReader, CSchema
from pyarrow.includes.libarrow_dataset cimport CDataset, CFragment, CFragmentScanOptions
from pyarrow.lib cimport RecordBatchReader, Schema, Table

from pyarrow.lib import frombytes


cdef extern from "client/arrow_dataset/object_scan_handler.h" namespace "skyhook::client" nogil:
    cdef cppclass CObjectScan "skyhook::client::ObjectScan":
        int64_t object_index
        CExpression filter
        vector[c_string] columns
        int64_t batch_size
        shared_ptr[CFragmentScanOptions] scan_options

    cdef cppclass CObjectScanHandler "skyhook::client::ObjectScanHandler":
        pass

cdef extern from "client/arrow_dataset/object_fragment.h" namespace "skyhook::client" nogil:
    cdef cppclass CObjectFragment "skyhook::client::ObjectFragment"(CFragment):
        CObjectFragment(int64_t object_index, int64_t num_rows, CExpression guarantee,
                        shared_ptr[CSchema] schema, shared_ptr[CObjectScanHandler] handler)

cdef extern from "client/arrow_dataset/object_dataset.h" namespace "skyhook::client" nogil:
    cdef cppclass CObjectDataset "skyhook::client::ObjectDataset"(CDataset):
        CObjectDataset(shared_ptr[CSchema] schema, vector[shared_ptr[CObjectFragment]] fragments)

cdef extern from "client/arrow_dataset/object_scan_options.h" namespace "skyhook::client":
    cdef cppclass CObjectScanOptions "skyhook::client::ObjectScanOptions"(CFragmentScanOptions):
        CObjectScanOptions(PyObject* context)
        PyObject* context()

cdef extern from "client/arrow_dataset/python_scan_handler.h" namespace "skyhook::client":
    ctypedef void (*PythonScanCallback)(PyObject* handler, const CObjectScan& scan,
                                        shared_ptr[CRecordBatchReader]* reader) except *

    cdef cppclass CPythonScanHandler "skyhook::client::PythonScanHandler"(CObjectScanHandler):
        CPythonScanHandler(PyObject* handler, PythonScanCallback callback)


cdef void _scan_object(PyObject* handler, const CObjectScan& scan,
                       shared_ptr[CRecordBatchReader]* reader) except *:
    context = None
    if scan.scan_options.get() != NULL and frombytes(scan.scan_options.get().type_name()) == "skyhook":
        context = <object>(<CObjectScanOptions*>scan.scan_options.get()).context()
    columns = [frombytes(scan.columns[i]) for i in range(scan.columns.size())]
    result = (<object>handler).scan_object(scan.object_index, Expression.wrap(scan.filter), columns,
                                           scan.batch_size, context)
    if isinstance(result, Table):
        result = result.to_reader()
    reader[0] = (<RecordBatchReader?>result).reader


cdef class ObjectDataset(Dataset):
    """Base of skyhook.Dataset: the Arrow C++ dataset of a stored dataset's objects."""

    def _attach(self, Schema schema, guarantees, num_rows, handler):
        """Builds the C++ dataset: one fragment per object, pruned by its
        guarantee, scanned through handler.scan_object(index, filter,
        columns, batch_size, context) -> pyarrow Table or RecordBatchReader."""
        cdef shared_ptr[CObjectScanHandler] c_handler = shared_ptr[CObjectScanHandler](
            new CPythonScanHandler(<PyObject*>handler, _scan_object))
        cdef vector[shared_ptr[CObjectFragment]] fragments
        cdef Expression guarantee
        for index, (guarantee, rows) in enumerate(zip(guarantees, num_rows)):
            fragments.push_back(shared_ptr[CObjectFragment](new CObjectFragment(
                index, rows, guarantee.unwrap(), schema.sp_schema, c_handler)))
        self.init(shared_ptr[CDataset](new CObjectDataset(schema.sp_schema, fragments)))


cdef class ObjectScanOptions(FragmentScanOptions):
    """Fragment scan options carrying a skyhook scan's context to its fragments."""

    def __init__(self, context):
        self.init(shared_ptr[CFragmentScanOptions](new CObjectScanOptions(<PyObject*>context)))


def adopt_scanner(Scanner target, Scanner source):
    """Makes target (a subclass instance made without pyarrow's constructor) run
    source's C++ scanner."""
    target.init(source.wrapped)
