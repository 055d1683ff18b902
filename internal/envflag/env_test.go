package envflag

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStringAndIntTakeAnEmptyVariableAsUnset(t *testing.T) {
	t.Setenv("ENVFLAG_TEST_S", "")
	t.Setenv("ENVFLAG_TEST_N", "")
	require.Equal(t, "def", String("ENVFLAG_TEST_S", "def"))
	n, err := Int("ENVFLAG_TEST_N", 7)
	require.NoError(t, err)
	require.EqualValues(t, 7, n)

	t.Setenv("ENVFLAG_TEST_S", "set")
	t.Setenv("ENVFLAG_TEST_N", " 42 ")
	require.Equal(t, "set", String("ENVFLAG_TEST_S", "def"))
	n, err = Int("ENVFLAG_TEST_N", 7)
	require.NoError(t, err)
	require.EqualValues(t, 42, n)
}

func TestIntRefusesWhatIsNotANonNegativeInteger(t *testing.T) {
	for _, v := range []string{"-1", "ten", "1.5"} {
		t.Setenv("ENVFLAG_TEST_N", v)
		_, err := Int("ENVFLAG_TEST_N", 7)
		require.EqualError(t, err, `ENVFLAG_TEST_N must be a non-negative integer, not "`+v+`"`)
	}
}

func TestListReadsEveryVariableInOrder(t *testing.T) {
	t.Setenv("ENVFLAG_TEST_A", " a, ,b ")
	t.Setenv("ENVFLAG_TEST_B", "")
	t.Setenv("ENVFLAG_TEST_C", "c")
	require.Equal(t, []string{"a", "b", "c"}, List("ENVFLAG_TEST_A", "ENVFLAG_TEST_B", "ENVFLAG_TEST_C"))
	require.Nil(t, Split(" , "))
	require.Equal(t, "flag", Or("flag", "env"))
	require.Equal(t, "env", Or("", "env"))
}
